package dev.elves.registry.schema;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/** Part of readiness: not ready until the schema is migrated (and the consumers started). */
@Component("schema")
class SchemaHealthIndicator implements HealthIndicator {

	private final SchemaMigrator migrator;

	SchemaHealthIndicator(SchemaMigrator migrator) {
		this.migrator = migrator;
	}

	@Override
	public Health health() {
		String problem = this.migrator.problem();
		return (problem == null) ? Health.up().build() : Health.outOfService().withDetail("reason", problem).build();
	}

}
