package dev.elves.registry.schema;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Who migrates the schema and who gets what on its tables afterwards (environment variables in
 * brackets). With a migration role of its own, the registry's runtime role owns nothing: it
 * cannot drop or alter a table, only read and write rows.
 *
 * @param url         the database [SPRING_DATASOURCE_URL]
 * @param username    the role Flyway runs as, the tables' owner ("" = the runtime role)
 *                    [ELVES_REGISTRY_MIGRATION_USERNAME]
 * @param password    its password [ELVES_REGISTRY_MIGRATION_PASSWORD]
 * @param runtimeRole granted SELECT, INSERT, UPDATE, DELETE on the tables [SPRING_DATASOURCE_USERNAME]
 * @param resetRole   granted TRUNCATE on the tables a reset between tests empties ("" = none)
 *                    [ELVES_REGISTRY_RESET_ROLE]
 */
@ConfigurationProperties("elves.registry.migration")
public record MigrationProperties(@DefaultValue("") String url, @DefaultValue("") String username,
		@DefaultValue("") String password, @DefaultValue("") String runtimeRole, @DefaultValue("") String resetRole) {

	boolean ownRole() {
		return !this.username.isBlank();
	}

}
