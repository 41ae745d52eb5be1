package dev.elves.ingestor.volume;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The scratch format of a volume: a small header (magic, sweeps, radials, gates, gate size)
 * then little-endian 4-byte floats. Written in chunks so the write buffer stays small.
 */
public final class VolumeFile {

	private static final int MAGIC = 0x454c5631; // "ELV1"

	private static final int HEADER_BYTES = 5 * Integer.BYTES;

	private static final int CHUNK_FLOATS = 64 * 1024;

	private VolumeFile() {
	}

	public static void write(RadarVolume volume, Path file) throws IOException {
		try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
			ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
			header.putInt(MAGIC).putInt(volume.sweeps()).putInt(RadarVolume.RADIALS).putInt(volume.gates())
				.putFloat(volume.gateMeters())
				.flip();
			writeFully(channel, header);
			ByteBuffer chunk = ByteBuffer.allocate(CHUNK_FLOATS * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
			float[] values = volume.values();
			for (int start = 0; start < values.length; start += CHUNK_FLOATS) {
				int count = Math.min(CHUNK_FLOATS, values.length - start);
				chunk.clear();
				chunk.asFloatBuffer().put(values, start, count);
				chunk.limit(count * Float.BYTES);
				writeFully(channel, chunk);
			}
		}
	}

	public static RadarVolume read(Path file) throws IOException {
		try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
			ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
			readFully(channel, header);
			header.flip();
			if (header.getInt() != MAGIC) {
				throw new IOException(file + " is not a volume file");
			}
			int sweeps = header.getInt();
			int radials = header.getInt();
			int gates = header.getInt();
			float gateMeters = header.getFloat();
			if (radials != RadarVolume.RADIALS) {
				throw new IOException(file + " has " + radials + " radials, expected " + RadarVolume.RADIALS);
			}
			float[] values = new float[sweeps * radials * gates];
			ByteBuffer chunk = ByteBuffer.allocate(CHUNK_FLOATS * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
			for (int start = 0; start < values.length; start += CHUNK_FLOATS) {
				int count = Math.min(CHUNK_FLOATS, values.length - start);
				chunk.clear().limit(count * Float.BYTES);
				readFully(channel, chunk);
				chunk.flip();
				chunk.asFloatBuffer().get(values, start, count);
			}
			return new RadarVolume(sweeps, gates, gateMeters, values);
		}
	}

	private static void writeFully(FileChannel channel, ByteBuffer buffer) throws IOException {
		while (buffer.hasRemaining()) {
			channel.write(buffer);
		}
	}

	private static void readFully(FileChannel channel, ByteBuffer buffer) throws IOException {
		while (buffer.hasRemaining()) {
			if (channel.read(buffer) < 0) {
				throw new IOException("volume file ends early");
			}
		}
	}

}
