package dev.elves.ingestor.volume;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalTime;

import dev.elves.contracts.DataRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class VolumeTest {

	private static final DataRequest KTLX = new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0),
			LocalTime.of(11, 30));

	private final VolumeSynthesizer synthesizer = new VolumeSynthesizer(3, 200);

	@Test
	void theSameRequestGivesTheSameVolumeEveryTime() {
		RadarVolume first = this.synthesizer.synthesize(KTLX);
		RadarVolume second = new VolumeSynthesizer(3, 200)
			.synthesize(new DataRequest("KTLX", LocalDate.parse("2024-05-20"), LocalTime.parse("10:00"),
					LocalTime.parse("11:30")));
		assertThat(second.values()).isEqualTo(first.values());
	}

	@Test
	void anotherRequestGivesAnotherVolumeOfTheConfiguredShape() {
		RadarVolume volume = this.synthesizer.synthesize(KTLX);
		RadarVolume other = this.synthesizer
			.synthesize(new DataRequest("KIND", KTLX.date(), KTLX.start(), KTLX.end()));
		assertThat(volume.values()).hasSize(3 * 360 * 200);
		assertThat(other.values()).isNotEqualTo(volume.values());
		float strongest = RadarVolume.NO_ECHO;
		for (float value : volume.values()) {
			strongest = Math.max(strongest, value);
		}
		assertThat(strongest).as("some echo above 20 dBZ").isGreaterThan(20f);
		assertThat(java.util.Arrays.binarySearch(sorted(volume), RadarVolume.NO_ECHO)).as("and clear air").isGreaterThanOrEqualTo(0);
	}

	@Test
	void aVolumeWrittenToAFileReadsBackIdentical(@TempDir Path dir) throws IOException {
		RadarVolume volume = this.synthesizer.synthesize(KTLX);
		Path file = dir.resolve("volume.elv");

		VolumeFile.write(volume, file);

		assertThat(Files.size(file)).isEqualTo(20 + 4L * volume.values().length);
		RadarVolume back = VolumeFile.read(file);
		assertThat(back.sweeps()).isEqualTo(3);
		assertThat(back.gates()).isEqualTo(200);
		assertThat(back.values()).isEqualTo(volume.values());
	}

	@Test
	void aFileThatIsNotAVolumeIsRefused(@TempDir Path dir) throws IOException {
		Path file = dir.resolve("junk");
		Files.write(file, new byte[64]);
		assertThatThrownBy(() -> VolumeFile.read(file)).isInstanceOf(IOException.class)
			.hasMessageContaining("not a volume file");
	}

	private static float[] sorted(RadarVolume volume) {
		float[] values = volume.values().clone();
		java.util.Arrays.sort(values);
		return values;
	}

}
