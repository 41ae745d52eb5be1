-- A request marked FAILED that later succeeds ends DONE: a dead-lettered request re-driven once
-- its cause is fixed (elves redrive), or an attempt still running when its request was given up.
-- DONE now ranks above FAILED; both stay above QUEUED and PROCESSING, so a late plot.started
-- still undoes neither, and nothing moves a DONE request back.
CREATE OR REPLACE FUNCTION status_rank(status text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT CASE status WHEN 'QUEUED' THEN 0 WHEN 'PROCESSING' THEN 1 WHEN 'FAILED' THEN 2 ELSE 3 END $$;
