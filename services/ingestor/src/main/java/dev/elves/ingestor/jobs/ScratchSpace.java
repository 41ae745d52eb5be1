package dev.elves.ingestor.jobs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.UUID;
import java.util.stream.Stream;

import dev.elves.ingestor.IngestorProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.stereotype.Component;

/**
 * One directory per job under the scratch directory, deleted when the job ends however it ends.
 * Each job holds an OS lock on a file in its directory; a directory whose lock is free belongs
 * to a process that died (kill -9, OOM) and is removed at start-up, so even a crash leaves
 * nothing behind once the ingestor is back. Replicas may share the directory.
 */
@Component
public class ScratchSpace {

	private static final Logger log = LoggerFactory.getLogger(ScratchSpace.class);

	static final String JOB_PREFIX = "job-";

	private static final String LOCK_FILE = ".lock";

	private final Path root;

	ScratchSpace(IngestorProperties properties) {
		this.root = properties.scratchDir();
		try {
			Files.createDirectories(this.root);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("cannot create the scratch directory " + this.root
					+ " (ELVES_INGESTOR_SCRATCH_DIR)", ex);
		}
		removeAbandonedJobs();
	}

	public Path root() {
		return this.root;
	}

	/** A job's private directory; close it to delete the directory and everything in it. */
	public final class JobDirectory implements AutoCloseable {

		private final Path path;

		private final FileChannel lockChannel;

		private final FileLock lock;

		private JobDirectory(Path path, FileChannel lockChannel, FileLock lock) {
			this.path = path;
			this.lockChannel = lockChannel;
			this.lock = lock;
		}

		public Path path() {
			return this.path;
		}

		@Override
		public void close() {
			try {
				this.lock.release();
				this.lockChannel.close();
			}
			catch (IOException ex) {
				log.warn("could not release the lock of {}: {}", this.path, ex.getMessage());
			}
			deleteTree(this.path);
		}

	}

	public JobDirectory open(UUID requestId) throws IOException {
		Path path = Files.createTempDirectory(this.root, JOB_PREFIX + requestId + "-");
		FileChannel channel = FileChannel.open(path.resolve(LOCK_FILE), StandardOpenOption.CREATE_NEW,
				StandardOpenOption.WRITE);
		try {
			return new JobDirectory(path, channel, channel.lock());
		}
		catch (IOException | RuntimeException ex) {
			channel.close();
			deleteTree(path);
			throw ex;
		}
	}

	private void removeAbandonedJobs() {
		try (DirectoryStream<Path> jobs = Files.newDirectoryStream(this.root, JOB_PREFIX + "*")) {
			for (Path job : jobs) {
				if (isAbandoned(job)) {
					log.info("removing scratch files of a job whose process died: {}", job);
					deleteTree(job);
				}
			}
		}
		catch (IOException ex) {
			log.warn("could not look for abandoned jobs in {}: {}", this.root, ex.getMessage());
		}
	}

	private static boolean isAbandoned(Path job) {
		Path lockFile = job.resolve(LOCK_FILE);
		if (!Files.exists(lockFile)) {
			return true;
		}
		try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.WRITE)) {
			FileLock lock = channel.tryLock();
			if (lock == null) {
				return false;
			}
			lock.release();
			return true;
		}
		catch (OverlappingFileLockException ex) {
			return false;
		}
		catch (IOException ex) {
			return false;
		}
	}

	static void deleteTree(Path path) {
		if (!Files.exists(path)) {
			return;
		}
		try (Stream<Path> files = Files.walk(path)) {
			files.sorted(Comparator.reverseOrder()).forEach((file) -> {
				try {
					Files.deleteIfExists(file);
				}
				catch (IOException ex) {
					log.warn("could not delete scratch file {}: {}", file, ex.getMessage());
				}
			});
		}
		catch (IOException ex) {
			log.warn("could not delete scratch directory {}: {}", path, ex.getMessage());
		}
	}

}
