package dev.elves.ingestor.plot;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.HashSet;
import java.util.Set;

import javax.imageio.ImageIO;

import dev.elves.contracts.DataRequest;
import dev.elves.ingestor.volume.RadarVolume;
import dev.elves.ingestor.volume.VolumeSynthesizer;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class PpiRendererTest {

	@Test
	void rendersAValidPngOfTheConfiguredSizeWithTheColourScale() throws IOException {
		System.setProperty("java.awt.headless", "true");
		RadarVolume volume = new VolumeSynthesizer(2, 300)
			.synthesize(new DataRequest("KFWS", LocalDate.of(2023, 4, 2), LocalTime.of(18, 0), LocalTime.of(19, 0)));

		byte[] png = new PpiRenderer(320).render(volume, "KFWS test");

		assertThat(png).startsWith(0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a);
		assertThat(png.length).as("a real plot, not a blank image").isGreaterThan(5_000);
		BufferedImage image = ImageIO.read(new ByteArrayInputStream(png));
		assertThat(image.getWidth()).isEqualTo(320);
		assertThat(image.getHeight()).isEqualTo(320);
		Set<Integer> paletteSeen = new HashSet<>();
		for (int y = 0; y < 320; y++) {
			for (int x = 0; x < 320; x++) {
				int rgb = image.getRGB(x, y) & 0xffffff;
				for (int colour : ReflectivityColors.RGB) {
					if (colour == rgb) {
						paletteSeen.add(colour);
					}
				}
			}
		}
		assertThat(paletteSeen).as("several reflectivity colours are drawn").hasSizeGreaterThan(4);
	}

	@Test
	void coloursFollowTheReflectivity() {
		assertThat(ReflectivityColors.of(0f)).isEqualTo(ReflectivityColors.NONE);
		assertThat(ReflectivityColors.of(RadarVolume.NO_ECHO)).isEqualTo(ReflectivityColors.NONE);
		assertThat(ReflectivityColors.of(5f)).isEqualTo(ReflectivityColors.RGB[0]);
		assertThat(ReflectivityColors.of(52f)).isEqualTo(ReflectivityColors.RGB[9]);
		assertThat(ReflectivityColors.of(99f)).isEqualTo(ReflectivityColors.RGB[ReflectivityColors.RGB.length - 1]);
	}

}
