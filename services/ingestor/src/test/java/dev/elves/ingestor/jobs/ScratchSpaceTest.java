package dev.elves.ingestor.jobs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.UUID;

import dev.elves.contracts.DataRequest;
import dev.elves.ingestor.IngestorProperties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ScratchSpaceTest {

	@TempDir
	Path root;

	private IngestorProperties properties() {
		return new IngestorProperties(200, 2, 128, 1, 1, this.root, java.time.Duration.ZERO);
	}

	@Test
	void aJobLeavesNothingBehindWhenItSucceeds() throws Exception {
		PlotJob job = new PlotJob(new ScratchSpace(properties()), properties());

		byte[] png = job.run(UUID.randomUUID(),
				new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0), LocalTime.of(11, 0)));

		assertThat(png).isNotEmpty();
		assertThat(this.root).isEmptyDirectory();
	}

	@Test
	void aJobLeavesNothingBehindWhenItFails() throws IOException {
		ScratchSpace scratch = new ScratchSpace(properties());
		assertThatThrownBy(() -> {
			try (ScratchSpace.JobDirectory directory = scratch.open(UUID.randomUUID())) {
				Files.writeString(directory.path().resolve("volume.elv"), "half written");
				throw new IOException("disk full");
			}
		}).hasMessage("disk full");
		assertThat(this.root).isEmptyDirectory();
	}

	@Test
	void filesOfADeadProcessAreRemovedAtStartButLiveJobsAreKept() throws IOException {
		Path abandoned = Files.createDirectories(this.root.resolve(ScratchSpace.JOB_PREFIX + "dead"));
		Files.writeString(abandoned.resolve(".lock"), "");
		Files.writeString(abandoned.resolve("volume.elv"), "left by kill -9");
		ScratchSpace first = new ScratchSpace(properties());
		try (ScratchSpace.JobDirectory live = first.open(UUID.randomUUID())) {
			new ScratchSpace(properties());

			assertThat(abandoned).doesNotExist();
			assertThat(live.path()).exists();
		}
		assertThat(this.root).isEmptyDirectory();
	}

}
