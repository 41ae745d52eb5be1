package dev.elves.ingestor.jobs;

import java.io.IOException;
import java.nio.file.Path;
import java.util.UUID;

import dev.elves.contracts.DataRequest;
import dev.elves.ingestor.IngestorProperties;
import dev.elves.ingestor.plot.PpiRenderer;
import dev.elves.ingestor.volume.RadarVolume;
import dev.elves.ingestor.volume.VolumeFile;
import dev.elves.ingestor.volume.VolumeSynthesizer;

import org.springframework.stereotype.Component;

/**
 * The work of one request, as the original ingestor did it: fetch a volume to a secondary
 * volume (here: synthesize it and write it to the scratch directory), read it back, plot it,
 * clean up. The scratch files are gone when this returns or throws.
 */
@Component
public class PlotJob {

	private final ScratchSpace scratch;

	private final VolumeSynthesizer synthesizer;

	private final PpiRenderer renderer;

	private final java.time.Duration fetchDelay;

	PlotJob(ScratchSpace scratch, IngestorProperties properties) {
		this.scratch = scratch;
		this.synthesizer = new VolumeSynthesizer(properties.sweeps(), properties.gates());
		this.renderer = new PpiRenderer(properties.imageSize());
		this.fetchDelay = properties.fetchDelay();
	}

	public byte[] run(UUID requestId, DataRequest request) throws IOException, InterruptedException {
		try (ScratchSpace.JobDirectory directory = this.scratch.open(requestId)) {
			Path file = directory.path().resolve("volume.elv");
			VolumeFile.write(this.synthesizer.synthesize(request), file);
			Thread.sleep(this.fetchDelay.toMillis());
			RadarVolume volume = VolumeFile.read(file);
			return this.renderer.render(volume, title(request));
		}
	}

	static String title(DataRequest request) {
		return request.radar() + "  " + request.date() + "  " + request.start() + "-" + request.end()
				+ " UTC  composite reflectivity";
	}

}
