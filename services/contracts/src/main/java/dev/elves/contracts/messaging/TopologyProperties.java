package dev.elves.contracts.messaging;

import java.util.List;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Which part of the topology this service declares [ELVES_RABBITMQ_DECLARE]: the queues it
 * consumes, comma-separated (each with its dead-letter queue and bindings), {@code *} for all of
 * them, or nothing for the exchanges alone. A broker user limited to its own queues may declare
 * no other: declaring a queue with a dead-letter exchange takes read permission on the queue,
 * which is also the permission to consume from it (elves.data_plane says who has which).
 *
 * @param declare queue names, or {@code *}
 */
@ConfigurationProperties("elves.messaging.topology")
public record TopologyProperties(@DefaultValue("*") List<String> declare) {

	public static final String ALL = "*";

	boolean declares(String queue) {
		return this.declare.contains(ALL) || this.declare.contains(queue);
	}

}
