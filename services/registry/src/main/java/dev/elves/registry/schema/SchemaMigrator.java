package dev.elves.registry.schema;

import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import javax.sql.DataSource;

import dev.elves.registry.RegistryProperties;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Migrates the schema (Flyway) in the background, retrying until PostgreSQL answers, then starts
 * the consumers. The service therefore starts, reports "not ready" and says why, instead of
 * crashing in a loop while the database is still coming up. With a migration role of its own
 * ({@link MigrationProperties}), Flyway connects as that role and then grants the runtime role
 * what it needs (db/grants/afterMigrate.sql).
 */
@Component
public class SchemaMigrator implements SmartLifecycle {

	private static final Logger log = LoggerFactory.getLogger(SchemaMigrator.class);

	private final Flyway flyway;

	private final RabbitListenerEndpointRegistry listeners;

	private final RegistryProperties properties;

	private final AtomicReference<String> problem = new AtomicReference<>("schema migration not started yet");

	private volatile boolean running;

	private volatile Thread worker;

	SchemaMigrator(DataSource dataSource, RabbitListenerEndpointRegistry listeners, RegistryProperties properties,
			MigrationProperties migration) {
		FluentConfiguration flyway = Flyway.configure()
			.locations("classpath:db/migration", "classpath:db/grants")
			.placeholders(Map.of("runtimeRole", migration.runtimeRole(), "resetRole", migration.resetRole()));
		this.flyway = (migration.ownRole()
				? flyway.dataSource(migration.url(), migration.username(), migration.password())
				: flyway.dataSource(dataSource))
			.load();
		this.listeners = listeners;
		this.properties = properties;
	}

	/** Null once the schema is current; otherwise why it is not. */
	public String problem() {
		return this.problem.get();
	}

	@EventListener(ApplicationReadyEvent.class)
	void migrateInBackground() {
		Thread thread = new Thread(this::migrateUntilDone, "schema-migrator");
		thread.setDaemon(true);
		this.worker = thread;
		thread.start();
	}

	private void migrateUntilDone() {
		int attempt = 0;
		while (this.running) {
			attempt++;
			try {
				this.flyway.migrate();
				this.problem.set(null);
				log.info("database schema is current; starting the consumers");
				this.listeners.getListenerContainers().forEach((container) -> container.start());
				return;
			}
			catch (RuntimeException ex) {
				String reason = "PostgreSQL not ready for migration (attempt " + attempt + "): " + rootMessage(ex);
				this.problem.set(reason);
				log.warn("{}; retrying in {}", reason, this.properties.migrationRetry());
			}
			try {
				Thread.sleep(this.properties.migrationRetry().toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
		}
	}

	private static String rootMessage(Throwable ex) {
		Throwable root = ex;
		while (root.getCause() != null && root.getCause() != root) {
			root = root.getCause();
		}
		return root.getClass().getSimpleName() + ": " + root.getMessage();
	}

	@Override
	public void start() {
		this.running = true;
	}

	@Override
	public void stop() {
		this.running = false;
		Thread thread = this.worker;
		if (thread != null) {
			thread.interrupt();
		}
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

}
