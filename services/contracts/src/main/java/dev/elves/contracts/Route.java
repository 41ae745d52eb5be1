package dev.elves.contracts;

import java.util.List;

/**
 * A routing key on the {@code elves} exchange and the queues it is bound to.
 *
 * <p>
 * A data request is routed to two queues in one publish: the ingestor's work queue and the
 * registry's activity-log queue (where it is the getData activity log and creates the request
 * row). One broker confirm therefore covers both, so a request can never be queued without its
 * log, or logged without being queued.
 */
public record Route(String routingKey, List<String> queues) {

	public static final Route DATA_REQUEST = new Route(MessageTypes.DATA_REQUESTED,
			List.of(Queues.INGESTOR_DATA, Queues.REGISTRY_APPLOG));

	public static final Route ACTIVITY_LOG = new Route(Queues.REGISTRY_APPLOG, List.of(Queues.REGISTRY_APPLOG));

	public static final Route PLOT_RESULT = new Route(Queues.REGISTRY_INGESTOR, List.of(Queues.REGISTRY_INGESTOR));

	public static final List<Route> ALL = List.of(DATA_REQUEST, ACTIVITY_LOG, PLOT_RESULT);

}
