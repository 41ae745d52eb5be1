package dev.elves.contracts;

import java.util.Set;

/** The {@code type} values of {@link Envelope}; docs/architecture.md lists who sends which. */
public final class MessageTypes {

	/** gateway to ingestor (and to the registry as the getData activity log); id = request id. */
	public static final String DATA_REQUESTED = "data.requested";

	/** gateway to registry: one per 2xx answer of the gateway. */
	public static final String ACTIVITY_LOGGED = "activity.logged";

	/** ingestor to registry: ids derived from the request id by {@link ResultIds}. */
	public static final String PLOT_STARTED = "plot.started";

	public static final String PLOT_COMPLETED = "plot.completed";

	public static final String PLOT_FAILED = "plot.failed";

	public static final Set<String> PLOT_RESULTS = Set.of(PLOT_STARTED, PLOT_COMPLETED, PLOT_FAILED);

	private MessageTypes() {
	}

}
