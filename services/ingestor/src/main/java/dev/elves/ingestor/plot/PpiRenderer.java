package dev.elves.ingestor.plot;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.awt.image.DataBufferInt;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

import javax.imageio.ImageIO;

import dev.elves.ingestor.volume.RadarVolume;

/**
 * Renders a plan position indicator: the column-maximum reflectivity of all sweeps seen from
 * above, radar at the centre, north up, with range rings, a title and a colour bar. Headless.
 */
public final class PpiRenderer {

	private static final int BACKGROUND = 0x101418;

	private static final Color RINGS = new Color(0x80, 0x80, 0x80, 0x90);

	private static final double RING_METERS = 50_000;

	static {
		// Encode in memory; never spill ImageIO caches into the scratch or temp directory.
		ImageIO.setUseCache(false);
	}

	private final int size;

	public PpiRenderer(int size) {
		this.size = size;
	}

	public byte[] render(RadarVolume volume, String title) {
		float[] composite = columnMaximum(volume);
		BufferedImage image = new BufferedImage(this.size, this.size, BufferedImage.TYPE_INT_RGB);
		int[] pixels = ((DataBufferInt) image.getRaster().getDataBuffer()).getData();
		double centre = this.size / 2.0;
		double gatesPerPixel = volume.gates() / centre;
		for (int y = 0; y < this.size; y++) {
			double dy = centre - (y + 0.5);
			for (int x = 0; x < this.size; x++) {
				double dx = (x + 0.5) - centre;
				int gate = (int) (Math.sqrt(dx * dx + dy * dy) * gatesPerPixel);
				int rgb = BACKGROUND;
				if (gate < volume.gates()) {
					double azimuth = Math.toDegrees(Math.atan2(dx, dy));
					int radial = (int) ((azimuth < 0) ? azimuth + 360 : azimuth) % RadarVolume.RADIALS;
					int colour = ReflectivityColors.of(composite[radial * volume.gates() + gate]);
					rgb = (colour == ReflectivityColors.NONE) ? BACKGROUND : colour;
				}
				pixels[y * this.size + x] = rgb;
			}
		}
		decorate(image, volume, title);
		return png(image);
	}

	private static float[] columnMaximum(RadarVolume volume) {
		int perSweep = RadarVolume.RADIALS * volume.gates();
		float[] composite = new float[perSweep];
		java.util.Arrays.fill(composite, RadarVolume.NO_ECHO);
		float[] values = volume.values();
		for (int sweep = 0; sweep < volume.sweeps(); sweep++) {
			int offset = sweep * perSweep;
			for (int i = 0; i < perSweep; i++) {
				composite[i] = Math.max(composite[i], values[offset + i]);
			}
		}
		return composite;
	}

	private void decorate(BufferedImage image, RadarVolume volume, String title) {
		Graphics2D g = image.createGraphics();
		try {
			g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
			g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
			double centre = this.size / 2.0;
			double pixelsPerMeter = centre / volume.maxRangeMeters();
			g.setColor(RINGS);
			g.setStroke(new BasicStroke(1f));
			for (double ring = RING_METERS; ring <= volume.maxRangeMeters(); ring += RING_METERS) {
				int r = (int) Math.round(ring * pixelsPerMeter);
				g.drawOval((int) centre - r, (int) centre - r, 2 * r, 2 * r);
			}
			g.drawLine((int) centre, 0, (int) centre, this.size);
			g.drawLine(0, (int) centre, this.size, (int) centre);
			int fontSize = Math.max(10, this.size / 50);
			g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, fontSize));
			g.setColor(Color.WHITE);
			g.drawString(title, fontSize / 2, fontSize + 2);
			drawColourBar(g, fontSize);
		}
		finally {
			g.dispose();
		}
	}

	private void drawColourBar(Graphics2D g, int fontSize) {
		int box = Math.max(8, this.size / 40);
		int x = this.size - box * 3;
		int y = this.size - box * (ReflectivityColors.RGB.length + 1);
		g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, Math.max(8, fontSize * 3 / 4)));
		for (int i = 0; i < ReflectivityColors.RGB.length; i++) {
			int top = y + (ReflectivityColors.RGB.length - 1 - i) * box;
			g.setColor(new Color(ReflectivityColors.RGB[i]));
			g.fillRect(x, top, box, box);
			if (i % 3 == 0) {
				g.setColor(Color.WHITE);
				String label = String.valueOf(ReflectivityColors.LOWEST_DBZ + i * ReflectivityColors.STEP_DBZ);
				g.drawString(label, x - g.getFontMetrics().stringWidth(label) - 3, top + box);
			}
		}
		g.setColor(Color.WHITE);
		g.drawString("dBZ", x, y - 3);
	}

	private static byte[] png(BufferedImage image) {
		ByteArrayOutputStream out = new ByteArrayOutputStream(64 * 1024);
		try {
			if (!ImageIO.write(image, "png", out)) {
				throw new IllegalStateException("this Java runtime has no PNG writer");
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		return out.toByteArray();
	}

}
