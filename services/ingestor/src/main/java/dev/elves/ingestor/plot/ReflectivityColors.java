package dev.elves.ingestor.plot;

/** The familiar NWS reflectivity palette, one colour per 5 dBZ from 5 to 75. */
final class ReflectivityColors {

	static final int LOWEST_DBZ = 5;

	static final int STEP_DBZ = 5;

	static final int[] RGB = { 0x04e9e7, 0x019ff4, 0x0300f4, 0x02fd02, 0x01c501, 0x008e00, 0xfdf802, 0xe5bc00,
			0xfd9500, 0xfd0000, 0xd40000, 0xbc0000, 0xf800fd, 0x9854c6, 0xfdfdfd };

	/** Below the lowest step: no colour (the background shows). */
	static final int NONE = -1;

	private ReflectivityColors() {
	}

	static int of(float dbz) {
		if (dbz < LOWEST_DBZ) {
			return NONE;
		}
		int step = (int) ((dbz - LOWEST_DBZ) / STEP_DBZ);
		return RGB[Math.min(step, RGB.length - 1)];
	}

}
