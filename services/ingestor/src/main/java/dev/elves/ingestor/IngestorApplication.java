package dev.elves.ingestor;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/** Turns data requests into radar plots: synthetic volume, scratch file, PPI PNG, confirmed result. */
@SpringBootApplication
@ConfigurationPropertiesScan
public class IngestorApplication {

	public static void main(String[] args) {
		SpringApplication.run(IngestorApplication.class, args);
	}

}
