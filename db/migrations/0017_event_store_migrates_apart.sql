-- From here on the event store (analytics_events, analytics_untimed_ids, analytics_erasures) has a migration set of its own, db/migrations-events, applied where the events live (docs/scaling.md, "A database for events"). Its tables made by the migrations above stay as they are; nothing changes in this database.
SELECT 1;
