-- The registry's tables. Every message-fed table is keyed by the message (or request) id, so
-- a redelivered message inserts nothing (INSERT ... ON CONFLICT DO NOTHING) and is counted
-- in duplicates instead.

CREATE TABLE users (
    id         text PRIMARY KEY,
    first_seen timestamptz NOT NULL
);

CREATE TABLE activity_logs (
    id         uuid PRIMARY KEY,          -- the message id
    user_id    text NOT NULL,
    endpoint   text NOT NULL,
    request_id uuid,
    test_id    text,
    time       timestamptz NOT NULL
);
-- getHistory (latest 20) and getAllHistory (paged) read a user's logs newest first.
CREATE INDEX activity_logs_user_time ON activity_logs (user_id, time DESC);
-- The ledger counts a test's logs per endpoint.
CREATE INDEX activity_logs_test_endpoint ON activity_logs (test_id, endpoint) WHERE test_id IS NOT NULL;

-- Status only moves forward: QUEUED < PROCESSING < DONE | FAILED (terminal).
CREATE FUNCTION status_rank(status text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT CASE status WHEN 'QUEUED' THEN 0 WHEN 'PROCESSING' THEN 1 ELSE 2 END $$;

CREATE TABLE requests (
    id         uuid PRIMARY KEY,          -- the request id the gateway answered with
    user_id    text,
    test_id    text,
    radar      text,
    day        date,
    start_time time,
    end_time   time,
    status     text NOT NULL CHECK (status IN ('QUEUED', 'PROCESSING', 'DONE', 'FAILED')),
    error      text,
    created    timestamptz NOT NULL DEFAULT now(),
    updated    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX requests_test_status ON requests (test_id, status) WHERE test_id IS NOT NULL;

CREATE TABLE plots (
    request_id uuid PRIMARY KEY REFERENCES requests (id),
    png        bytea NOT NULL,
    created    timestamptz NOT NULL DEFAULT now()
);

-- Ingestor results already applied, by their (derived) message id.
CREATE TABLE processed_results (
    id         uuid PRIMARY KEY,
    request_id uuid NOT NULL,
    type       text NOT NULL,
    test_id    text,
    time       timestamptz NOT NULL
);

-- Redelivered messages discarded, per test id ('' for none) and queue.
CREATE TABLE duplicates (
    test_id text NOT NULL,
    queue   text NOT NULL,
    count   bigint NOT NULL,
    PRIMARY KEY (test_id, queue)
);
