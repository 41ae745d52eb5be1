package dev.elves.ingestor.volume;

/**
 * Reflectivity in dBZ, {@code sweeps x RADIALS x gates}, sweep-major then radial then gate.
 *
 * @param gateMeters the range resolution
 */
public record RadarVolume(int sweeps, int gates, float gateMeters, float[] values) {

	/** One radial per degree of azimuth. */
	public static final int RADIALS = 360;

	/** What "no echo" is stored as. */
	public static final float NO_ECHO = -32f;

	public RadarVolume {
		long expected = (long) sweeps * RADIALS * gates;
		if (values.length != expected) {
			throw new IllegalArgumentException("a " + sweeps + " x " + RADIALS + " x " + gates + " volume needs "
					+ expected + " values, got " + values.length);
		}
	}

	public float value(int sweep, int radial, int gate) {
		return this.values[(sweep * RADIALS + radial) * this.gates + gate];
	}

	public double maxRangeMeters() {
		return (double) this.gates * this.gateMeters;
	}

}
