CREATE INDEX "analytics_events_business_time_idx" ON "analytics_events" USING btree ("business_id","occurred_at","id");--> statement-breakpoint
ALTER TABLE "analytics_events" DROP CONSTRAINT "analytics_events_pkey";
--> statement-breakpoint
ALTER TABLE "analytics_events" ADD CONSTRAINT "analytics_events_pkey" PRIMARY KEY("business_id","id");