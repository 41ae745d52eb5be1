package dev.elves.ingestor.volume;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.SplittableRandom;

import dev.elves.contracts.DataRequest;

/**
 * Builds a plausible reflectivity volume for a request, with no outside data: a few storm cells
 * (Gaussian in the horizontal, fading with height), ground clutter near the radar and noise.
 * The same request always gives the same volume (the seed is a hash of the request).
 */
public final class VolumeSynthesizer {

	/** 250 m bins, the NEXRAD super-resolution gate spacing. */
	static final float GATE_METERS = 250f;

	private static final double[] ELEVATION_DEGREES = { 0.5, 0.9, 1.3, 1.8, 2.4, 3.1, 4.0, 5.1, 6.4, 8.0, 10.0,
			12.5, 14.0, 16.7, 19.5 };

	private static final double LN10_OVER_10 = Math.log(10) / 10;

	private final int sweeps;

	private final int gates;

	public VolumeSynthesizer(int sweeps, int gates) {
		this.sweeps = sweeps;
		this.gates = gates;
	}

	private record Cell(double x, double y, double radius, double peakDbz, double topMeters) {
	}

	public RadarVolume synthesize(DataRequest request) {
		SplittableRandom random = new SplittableRandom(seed(request));
		double maxRange = (double) this.gates * GATE_METERS;
		Cell[] cells = new Cell[3 + random.nextInt(6)];
		for (int i = 0; i < cells.length; i++) {
			double range = maxRange * (0.15 + 0.8 * random.nextDouble());
			double azimuth = random.nextDouble() * 2 * Math.PI;
			cells[i] = new Cell(range * Math.sin(azimuth), range * Math.cos(azimuth),
					maxRange * (0.03 + 0.12 * random.nextDouble()), 30 + 40 * random.nextDouble(),
					6_000 + 10_000 * random.nextDouble());
		}
		float[] values = new float[this.sweeps * RadarVolume.RADIALS * this.gates];
		double[] sin = new double[RadarVolume.RADIALS];
		double[] cos = new double[RadarVolume.RADIALS];
		for (int radial = 0; radial < RadarVolume.RADIALS; radial++) {
			sin[radial] = Math.sin(Math.toRadians(radial + 0.5));
			cos[radial] = Math.cos(Math.toRadians(radial + 0.5));
		}
		int index = 0;
		for (int sweep = 0; sweep < this.sweeps; sweep++) {
			double elevation = Math.toRadians(elevationDegrees(sweep));
			for (int radial = 0; radial < RadarVolume.RADIALS; radial++) {
				for (int gate = 0; gate < this.gates; gate++) {
					double range = (gate + 0.5) * GATE_METERS;
					double ground = range * Math.cos(elevation);
					double height = range * Math.sin(elevation);
					double x = ground * sin[radial];
					double y = ground * cos[radial];
					double linear = 0;
					for (Cell cell : cells) {
						double dx = x - cell.x();
						double dy = y - cell.y();
						double fade = 1 - height / cell.topMeters();
						if (fade > 0) {
							// 10^(dBZ/10) x Gaussian, as one exp
							linear += Math.exp(fade * cell.peakDbz() * LN10_OVER_10
									- (dx * dx + dy * dy) / (cell.radius() * cell.radius()));
						}
					}
					double clutter = (sweep == 0 && range < 20_000) ? 35 * (1 - range / 20_000) : 0;
					double noise = random.nextDouble() * 4 - 2;
					double dbz = Math.max(10 * Math.log10(linear + 1e-3), clutter) + noise;
					values[index++] = (dbz < 0) ? RadarVolume.NO_ECHO : (float) dbz;
				}
			}
		}
		return new RadarVolume(this.sweeps, this.gates, GATE_METERS, values);
	}

	static double elevationDegrees(int sweep) {
		return (sweep < ELEVATION_DEGREES.length) ? ELEVATION_DEGREES[sweep]
				: ELEVATION_DEGREES[ELEVATION_DEGREES.length - 1] + (sweep - ELEVATION_DEGREES.length + 1);
	}

	static long seed(DataRequest request) {
		String key = request.radar() + "|" + request.date() + "|" + request.start() + "|" + request.end();
		try {
			byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
			return ByteBuffer.wrap(digest).getLong();
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("every Java runtime has SHA-256", ex);
		}
	}

}
