package dev.elves.web;

import java.io.IOException;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.filter.OncePerRequestFilter;

import tools.jackson.databind.json.JsonMapper;

/**
 * Refuses request bodies above a limit with 413 before anything reads them: a declared
 * {@code Content-Length} over the limit at once, a chunked body as soon as it passes the limit
 * ({@link BodyTooLargeException}, which {@link ClientErrorAdvice} answers with 413).
 */
public class BodyLimitFilter extends OncePerRequestFilter {

	private final long maxBytes;

	private final JsonMapper mapper;

	public BodyLimitFilter(long maxBytes, JsonMapper mapper) {
		if (maxBytes < 1) {
			throw new IllegalArgumentException("the body limit must be at least 1 byte, got " + maxBytes);
		}
		this.maxBytes = maxBytes;
		this.mapper = mapper;
	}

	@Override
	protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
			throws ServletException, IOException {
		if (request.getContentLengthLong() > this.maxBytes) {
			response.setStatus(HttpStatus.CONTENT_TOO_LARGE.value());
			response.setContentType(MediaType.APPLICATION_JSON_VALUE);
			this.mapper.writeValue(response.getOutputStream(), tooLarge(this.maxBytes));
			return;
		}
		chain.doFilter(new Limited(request, this.maxBytes), response);
	}

	static ApiError tooLarge(long maxBytes) {
		return new ApiError("body: larger than " + maxBytes + " bytes", "body");
	}

	/** A body read past the limit (one sent without Content-Length). */
	public static class BodyTooLargeException extends IOException {

		private final long maxBytes;

		BodyTooLargeException(long maxBytes) {
			super("request body larger than " + maxBytes + " bytes");
			this.maxBytes = maxBytes;
		}

		public ApiError error() {
			return tooLarge(this.maxBytes);
		}

	}

	private static final class Limited extends HttpServletRequestWrapper {

		private final long maxBytes;

		private ServletInputStream stream;

		Limited(HttpServletRequest request, long maxBytes) {
			super(request);
			this.maxBytes = maxBytes;
		}

		@Override
		public ServletInputStream getInputStream() throws IOException {
			if (this.stream == null) {
				this.stream = new Counting(super.getInputStream(), this.maxBytes);
			}
			return this.stream;
		}

	}

	private static final class Counting extends ServletInputStream {

		private final ServletInputStream in;

		private final long maxBytes;

		private long read;

		Counting(ServletInputStream in, long maxBytes) {
			this.in = in;
			this.maxBytes = maxBytes;
		}

		@Override
		public int read() throws IOException {
			int b = this.in.read();
			if (b >= 0) {
				count(1);
			}
			return b;
		}

		@Override
		public int read(byte[] buffer, int offset, int length) throws IOException {
			int n = this.in.read(buffer, offset, length);
			if (n > 0) {
				count(n);
			}
			return n;
		}

		private void count(int n) throws BodyTooLargeException {
			this.read += n;
			if (this.read > this.maxBytes) {
				throw new BodyTooLargeException(this.maxBytes);
			}
		}

		@Override
		public boolean isFinished() {
			return this.in.isFinished();
		}

		@Override
		public boolean isReady() {
			return this.in.isReady();
		}

		@Override
		public void setReadListener(ReadListener listener) {
			this.in.setReadListener(listener);
		}

	}

}
