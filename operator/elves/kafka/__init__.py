"""Apache Kafka for the local mode: a KRaft broker on the machine's JRE (broker) and a reader of
consumer-group lag that Prometheus scrapes (lag), so a SystemUnderTest's queues may be the lag of
a consumer group on a topic (docs/own-system.md, "A Kafka-fed worker")."""
