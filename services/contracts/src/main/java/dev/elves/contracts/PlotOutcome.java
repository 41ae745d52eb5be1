package dev.elves.contracts;

import java.util.UUID;

/**
 * The payload of {@code plot.started}, {@code plot.completed} and {@code plot.failed}.
 *
 * @param requestId the request this is the result of
 * @param png       the rendered plot (base64 in JSON); only in plot.completed
 * @param error     why the plot could not be made; only in plot.failed
 */
public record PlotOutcome(UUID requestId, byte[] png, String error) {

	public static PlotOutcome started(UUID requestId) {
		return new PlotOutcome(requestId, null, null);
	}

	public static PlotOutcome completed(UUID requestId, byte[] png) {
		return new PlotOutcome(requestId, png, null);
	}

	public static PlotOutcome failed(UUID requestId, String error) {
		return new PlotOutcome(requestId, null, error);
	}

}
