package dev.elves.ingestor;

import java.nio.file.Path;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The ingestor's cost knobs (environment variables in brackets). CPU per job grows with
 * sweeps x gates and with imageSize squared; heap per job grows with sweeps x gates (two
 * volumes of 4-byte values are alive while a job reads its file back).
 *
 * @param gates       range bins per radial [ELVES_INGESTOR_GATES]
 * @param sweeps      elevation sweeps per volume [ELVES_INGESTOR_SWEEPS]
 * @param imageSize   width and height of the PNG in pixels [ELVES_INGESTOR_IMAGE_SIZE]
 * @param concurrency jobs in parallel (listener consumers) [ELVES_INGESTOR_CONCURRENCY]
 * @param prefetch    unacknowledged requests per consumer [ELVES_INGESTOR_PREFETCH]
 * @param scratchDir  where volumes are written and read back [ELVES_INGESTOR_SCRATCH_DIR]
 * @param fetchDelay  the archive download the original ingestor waited for, which no machine
 *                    here can reach, as a wait per job [ELVES_INGESTOR_FETCH_DELAY]; it makes
 *                    a replica's throughput bounded by its concurrency, not only by CPU, so
 *                    more replicas drain a pile even on one machine, as pods would
 */
@ConfigurationProperties("elves.ingestor")
public record IngestorProperties(int gates, int sweeps, int imageSize, int concurrency, int prefetch,
		Path scratchDir, java.time.Duration fetchDelay) {

	static final int MAX_GATES = 100_000;

	static final int MAX_SWEEPS = 100;

	static final int MAX_IMAGE_SIZE = 8192;

	public IngestorProperties {
		check("ELVES_INGESTOR_GATES", gates, 10, MAX_GATES);
		check("ELVES_INGESTOR_SWEEPS", sweeps, 1, MAX_SWEEPS);
		check("ELVES_INGESTOR_IMAGE_SIZE", imageSize, 64, MAX_IMAGE_SIZE);
		check("ELVES_INGESTOR_CONCURRENCY", concurrency, 1, 64);
		check("ELVES_INGESTOR_PREFETCH", prefetch, 1, 1000);
		if (fetchDelay == null) {
			fetchDelay = java.time.Duration.ZERO;
		}
		if (fetchDelay.isNegative()) {
			throw new IllegalArgumentException("ELVES_INGESTOR_FETCH_DELAY must not be negative, got " + fetchDelay);
		}
		if (scratchDir == null) {
			scratchDir = Path.of(System.getProperty("java.io.tmpdir"), "elves-ingestor");
		}
	}

	private static void check(String name, int value, int min, int max) {
		if (value < min || value > max) {
			throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", got " + value);
		}
	}

}
