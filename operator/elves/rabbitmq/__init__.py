"""What the harness asks of RabbitMQ itself, whichever platform runs it: rabbitmqctl's
arguments and how to read its answers (redrive), and Elves' publisher that k6 posts load to for
a RabbitMQ-fed system (publish). Each platform runs the commands where its broker runs (the
local mode's rabbitmqctl, an exec into the cluster's rabbitmq-0), so this package imports
neither platform nor the engine."""
