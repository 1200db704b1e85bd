-- Issue 31: analytics_events becomes range-partitioned by occurred_at, a partition a calendar
-- month (UTC), without losing a row. Written by hand (drizzle-kit cannot declare PARTITION BY;
-- its snapshot beside this file holds the same columns and keys). The drizzle migrator runs
-- it in one transaction: a failure leaves the old table as it was.
-- The old table steps aside with its indexes dropped (nothing reads it again; the copy goes faster).
ALTER TABLE "analytics_events" RENAME TO "analytics_events_unpartitioned";--> statement-breakpoint
ALTER TABLE "analytics_events_unpartitioned" DROP CONSTRAINT "analytics_events_pkey";--> statement-breakpoint
DROP INDEX IF EXISTS "analytics_events_business_time_idx";--> statement-breakpoint
DROP INDEX IF EXISTS "analytics_events_business_type_time_idx";--> statement-breakpoint
CREATE TABLE "analytics_events" (
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"business_id" uuid NOT NULL,
	"key_id" uuid NOT NULL,
	"origin" text,
	"event_type" text NOT NULL,
	"url" text,
	"referrer" text,
	"anonymous_id" text,
	"person_id" text,
	"properties" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"occurred_at" timestamp (3) with time zone NOT NULL,
	"received_at" timestamp with time zone NOT NULL,
	CONSTRAINT "analytics_events_pkey" PRIMARY KEY("business_id","occurred_at","id")
) PARTITION BY RANGE ("occurred_at");--> statement-breakpoint
CREATE INDEX "analytics_events_business_type_time_idx" ON "analytics_events" USING btree ("business_id","event_type","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
-- A partition for every month holding an old row, and for every month from 400 days back
-- (the default EVENT_RETENTION_DAYS) to tomorrow; the event maintenance keeps this up from
-- its first run at start-up (src/events/maintenance.ts names partitions the same way).
DO $$
DECLARE
	month timestamp;
BEGIN
	FOR month IN
		SELECT DISTINCT date_trunc('month', "occurred_at" AT TIME ZONE 'UTC') FROM "analytics_events_unpartitioned"
		UNION
		SELECT generate_series(
			date_trunc('month', (now() - interval '400 days') AT TIME ZONE 'UTC'),
			date_trunc('month', (now() + interval '1 day') AT TIME ZONE 'UTC'),
			interval '1 month')
	LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF "analytics_events" FOR VALUES FROM (%L) TO (%L)',
			'analytics_events_' || to_char(month, 'YYYY_MM'),
			(month AT TIME ZONE 'UTC')::text,
			((month + interval '1 month') AT TIME ZONE 'UTC')::text);
	END LOOP;
END $$;--> statement-breakpoint
INSERT INTO "analytics_events" ("id", "business_id", "key_id", "origin", "event_type", "url", "referrer", "anonymous_id", "person_id", "properties", "occurred_at", "received_at")
	SELECT "id", "business_id", "key_id", "origin", "event_type", "url", "referrer", "anonymous_id", "person_id", "properties", "occurred_at", "received_at"
	FROM "analytics_events_unpartitioned";--> statement-breakpoint
CREATE TABLE "analytics_untimed_ids" (
	"business_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"occurred_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "analytics_untimed_ids_pkey" PRIMARY KEY("business_id","id")
);--> statement-breakpoint
CREATE INDEX "analytics_untimed_ids_occurred_idx" ON "analytics_untimed_ids" USING btree ("occurred_at");--> statement-breakpoint
-- Events of the last 24 hours stored at their receive time may have come without a
-- timestamp: their ids are remembered, so that a retry after the upgrade is recognized.
INSERT INTO "analytics_untimed_ids" ("business_id", "id", "occurred_at")
	SELECT "business_id", "id", "occurred_at" FROM "analytics_events_unpartitioned"
	WHERE "received_at" > now() - interval '24 hours' AND "occurred_at" = "received_at"::timestamp (3) with time zone
	ON CONFLICT DO NOTHING;--> statement-breakpoint
DROP TABLE "analytics_events_unpartitioned";--> statement-breakpoint
-- The per-business retention (issue 31); also added by its own change, hence IF NOT EXISTS.
ALTER TABLE "businesses" ADD COLUMN IF NOT EXISTS "event_retention_days" integer;
