-- The event store as the service's migrations 0000-0016 left it (docs/scaling.md, "A database for events"): made here on a database of its own (EVENTS_DATABASE_URL), and a no-op beside the service's tables, where those migrations made it already. Partitioned by month of occurred_at: the months of the default retention and the next are made here, as the service's migration 0009 made them, so that the first event has its partition; the event maintenance keeps them from then on (src/events/partitions.ts).
CREATE TABLE IF NOT EXISTS "analytics_events" (
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
) PARTITION BY RANGE ("occurred_at");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "analytics_untimed_ids" (
	"business_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"occurred_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "analytics_untimed_ids_pkey" PRIMARY KEY("business_id","id")
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "analytics_erasures" (
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"business_id" uuid NOT NULL,
	"person_id" text,
	"anonymous_id" text,
	"requested_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp (3) with time zone,
	"deleted" bigint DEFAULT 0 NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"requested_by" text NOT NULL,
	"key_id" uuid,
	"request_id" text,
	"claimed_until" timestamp with time zone,
	CONSTRAINT "analytics_erasures_pkey" PRIMARY KEY("business_id","id"),
	CONSTRAINT "analytics_erasures_status_check" CHECK ("analytics_erasures"."status" in ('pending', 'done')),
	CONSTRAINT "analytics_erasures_identifier_check" CHECK ("analytics_erasures"."status" = 'done' or "analytics_erasures"."person_id" is not null or "analytics_erasures"."anonymous_id" is not null)
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "analytics_events_business_type_time_idx" ON "analytics_events" USING btree ("business_id","event_type","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "analytics_untimed_ids_occurred_idx" ON "analytics_untimed_ids" USING btree ("occurred_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "analytics_erasures_business_idx" ON "analytics_erasures" USING btree ("business_id","requested_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "analytics_erasures_pending_idx" ON "analytics_erasures" USING btree ("business_id") WHERE "analytics_erasures"."status" = 'pending';--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "analytics_erasures_done_idx" ON "analytics_erasures" USING btree ("business_id","completed_at") WHERE "analytics_erasures"."status" = 'done';
--> statement-breakpoint
DO $$
DECLARE
	month timestamp;
BEGIN
	FOR month IN
		SELECT generate_series(
			date_trunc('month', (now() - interval '400 days') AT TIME ZONE 'UTC'),
			date_trunc('month', (now() + interval '1 day') AT TIME ZONE 'UTC'),
			interval '1 month')
	LOOP
		EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF "analytics_events" FOR VALUES FROM (%L) TO (%L)',
			'analytics_events_' || to_char(month, 'YYYY_MM'),
			(month AT TIME ZONE 'UTC')::text,
			((month + interval '1 month') AT TIME ZONE 'UTC')::text);
	END LOOP;
END $$;
