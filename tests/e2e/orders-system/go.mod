// The "orders" system of tier 4 (tests/e2e/test_foreign_system.py): a small event-driven
// system that is not Elves, judged by a LoadTest through a SystemUnderTest. Built into the
// image elves/orders by tools/e2e/build-go-binaries.sh and tools/e2e/build-images.sh.
module elves.local/orders-system

go 1.25.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/rabbitmq/amqp091-go v1.16.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
