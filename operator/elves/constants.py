"""Names that several parts of Elves share: one home for each fact.

The Java side keeps the same queue names in services/contracts (a unit test checks
that both agree); the chart and the dashboards use the PromQL built from these.
"""

API_GROUP = "elves.dev"
API_VERSION = "v1alpha1"
KIND = "LoadTest"
PLURAL = "loadtests"
SHORT_NAME = "lt"
# The system a LoadTest judges (spec.target.systemUnderTest); the chart ships Elves' own system
# as the SystemUnderTest BUILTIN_SYSTEM_UNDER_TEST in its release namespace.
SUT_KIND = "SystemUnderTest"
SUT_PLURAL = "systemundertests"
SUT_SHORT_NAME = "sut"
BUILTIN_SYSTEM_UNDER_TEST = "elves"

# The namespace the system runs in; the local mode reports its processes under it too.
SYSTEM_NAMESPACE = "elves"
LOCAL_TEST_NAMESPACE = "local"
# The local mode's series of another team's processes (the own-system scrape job, docs/own-system.md):
# never the system's namespace, so a team's service cannot speak for Elves'.
OWN_SYSTEM_NAMESPACE = "own-system"

# The deployments of the system under test (also their container names).
GATEWAY = "gateway"
REGISTRY = "registry"
INGESTOR = "ingestor"
DEPLOYMENTS = (GATEWAY, REGISTRY, INGESTOR)

# The settings a LoadTest may change per service (spec.system.env, its sweeps): the services'
# performance knobs (services/README.md), never a credential, an address or the JVM's command
# line. The CRD refuses any other name at admission, the local mode the same way.
# (The delivery limit and the queue bounds are queue arguments, fixed when the queues are
# declared: not per test.)
SHARED_TUNABLES = ("ELVES_CONFIRM_TIMEOUT", "ELVES_RABBITMQ_CHANNEL_CACHE", "ELVES_SHUTDOWN_TIMEOUT",
                   "ELVES_PUBLISH_PATIENCE")
TUNABLES = {
    GATEWAY: SHARED_TUNABLES + ("ELVES_GATEWAY_THREADS", "ELVES_GATEWAY_MAX_BODY", "ELVES_GATEWAY_USER_RATE",
                                "ELVES_GATEWAY_USER_BURST", "ELVES_REGISTRY_CONNECT_TIMEOUT",
                                "ELVES_REGISTRY_READ_TIMEOUT", "ELVES_GATEWAY_MAX_READS", "ELVES_GATEWAY_MAX_WRITES",
                                "ELVES_GATEWAY_ADMISSION_WAIT", "ELVES_REGISTRY_MAX_CONCURRENT",
                                "ELVES_REGISTRY_QUEUE_TIMEOUT"),
    REGISTRY: SHARED_TUNABLES + ("ELVES_REGISTRY_DB_POOL", "ELVES_REGISTRY_DB_CONNECT_TIMEOUT",
                                 "ELVES_REGISTRY_CONCURRENCY", "ELVES_REGISTRY_PREFETCH", "ELVES_REGISTRY_BATCH_SIZE",
                                 "ELVES_REGISTRY_BATCH_WAIT", "ELVES_REGISTRY_RESULT_CONCURRENCY",
                                 "ELVES_REGISTRY_RESULT_PREFETCH", "ELVES_REGISTRY_RETRY_TIMEOUT",
                                 "ELVES_REGISTRY_MAX_BODY"),
    INGESTOR: SHARED_TUNABLES + ("ELVES_INGESTOR_GATES", "ELVES_INGESTOR_SWEEPS", "ELVES_INGESTOR_IMAGE_SIZE",
                                 "ELVES_INGESTOR_CONCURRENCY", "ELVES_INGESTOR_PREFETCH",
                                 "ELVES_INGESTOR_FETCH_DELAY"),
}

EXCHANGE = "elves"
QUEUE_INGESTOR_DATA = "elves.ingestor.data.in"
QUEUE_REGISTRY_APPLOG = "elves.registry.applog.in"
QUEUE_REGISTRY_INGESTOR = "elves.registry.ingestor.in"
WORK_QUEUES = (QUEUE_INGESTOR_DATA, QUEUE_REGISTRY_APPLOG, QUEUE_REGISTRY_INGESTOR)
# The work queue whose length KEDA scales a deployment on (spec.system.autoscaling, the chart's
# services.<name>.autoscaling); the deployments not named here are scaled by the HPA on CPU.
SCALED_ON_QUEUE = {INGESTOR: QUEUE_INGESTOR_DATA}
# Where rejected and over-delivered messages go, routed to <queue>.dlq.
DEAD_LETTER_EXCHANGE = "elves.dlx"
DEAD_LETTER_SUFFIX = ".dlq"
DEAD_LETTER_QUEUES = tuple(q + DEAD_LETTER_SUFFIX for q in WORK_QUEUES)
# The registry's copy of every data request the broker dead-letters, so that it can mark the
# request FAILED even when the ingestor died on every delivery.
QUEUE_REGISTRY_DEAD_REQUESTS = "elves.registry.deadrequests.in"
# The bound of every dead-letter queue, a RabbitMQ policy (set locally once the broker is up, on
# the chart by the broker's postStart hook): a policy applies to queues that exist already,
# where a changed queue argument would be refused. Past the bound the DLQ refuses new dead
# letters (reject-publish) rather than dropping its oldest (drop-head): the work queues
# dead-letter at least once, so a refused dead letter stays in its work queue, counted against
# that queue's own bound, and nothing dead-lettered is lost; the services' dead-lettered
# counter and the registry's FAILED rows count it either way.
DEAD_LETTER_POLICY = "elves-dead-letter-bound"
DEAD_LETTER_POLICY_PATTERN = r"^elves\..+\.dlq$"
DEAD_LETTER_POLICY_DEFINITION = {"max-length": 100_000, "max-length-bytes": 100 * 1024 * 1024,
                                 "overflow": "reject-publish"}
# Every queue the services declare: what a reset between tests empties.
SYSTEM_QUEUES = WORK_QUEUES + DEAD_LETTER_QUEUES + (QUEUE_REGISTRY_DEAD_REQUESTS,)
# What Prometheus asks of RabbitMQ's /metrics/detailed (the chart's ServiceMonitor and the
# local Prometheus alike): per-queue depth and consumers, and the per-channel, per-queue
# publish, deliver and ack counters (kept up by the management agent the plugin depends on),
# without the costly per-object endpoint.
RABBITMQ_DETAILED_FAMILIES = ("queue_coarse_metrics", "queue_consumer_count",
                              "channel_queue_metrics", "channel_queue_exchange_metrics")

TEST_ID_HEADER = "X-Elves-Test-Id"

# Endpoint names: k6 tag `endpoint`, activity-log endpoint, scenario names and mix keys.
GATEWAY_ENDPOINTS = (
    "getData", "getStatus", "getImage", "getHistory", "getAllHistory", "getUser", "getAllUsers",
)
REGISTRY_ENDPOINTS = ("addAppLog", "getAppLog", "getUser", "getAllUsers")

# A reset empties every table of the system's database but the migration history: the local
# mode through psql on its own PostgreSQL, a cluster through pods/exec into postgres-0.
EMPTY_DATABASE_SQL = """
DO $$
DECLARE tables text;
BEGIN
  SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') INTO tables
    FROM pg_tables
   WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
     AND tablename <> 'flyway_schema_history';
  IF tables IS NOT NULL THEN
    EXECUTE 'TRUNCATE ' || tables || ' RESTART IDENTITY CASCADE';
  END IF;
END $$;
"""
