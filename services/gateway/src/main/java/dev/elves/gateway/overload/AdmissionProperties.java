package dev.elves.gateway.overload;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How many API requests the gateway works on at once, per bulkhead, before it refuses more.
 *
 * @param reads  reads (every GET of the API) in flight at once [ELVES_GATEWAY_MAX_READS]
 * @param writes getData requests in flight at once, a bulkhead of their own so that reads
 *               cannot starve them [ELVES_GATEWAY_MAX_WRITES]
 * @param maxWait longest wait for a place before answering 429 with Retry-After
 *               [ELVES_GATEWAY_ADMISSION_WAIT]
 */
@ConfigurationProperties("elves.admission")
public record AdmissionProperties(@DefaultValue("64") int reads, @DefaultValue("64") int writes,
		@DefaultValue("5ms") Duration maxWait) {

	public AdmissionProperties {
		if (reads < 1 || writes < 1) {
			throw new IllegalArgumentException("elves.admission.reads and .writes must be at least 1");
		}
	}

}
