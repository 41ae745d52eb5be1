package dev.elves.registry;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/** Keeps the history: consumes activity logs and plot results into PostgreSQL, serves the reads. */
@SpringBootApplication
@ConfigurationPropertiesScan
public class RegistryApplication {

	public static void main(String[] args) {
		SpringApplication.run(RegistryApplication.class, args);
	}

}
