CREATE TABLE "analytics_erasures" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
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
	CONSTRAINT "analytics_erasures_status_check" CHECK ("analytics_erasures"."status" in ('pending', 'done')),
	CONSTRAINT "analytics_erasures_identifier_check" CHECK ("analytics_erasures"."status" = 'done' or "analytics_erasures"."person_id" is not null or "analytics_erasures"."anonymous_id" is not null)
);
--> statement-breakpoint
ALTER TABLE "audit_entries" DROP CONSTRAINT "audit_entries_action_check";--> statement-breakpoint
ALTER TABLE "businesses" ADD COLUMN IF NOT EXISTS "event_retention_days" integer;--> statement-breakpoint
ALTER TABLE "analytics_erasures" ADD CONSTRAINT "analytics_erasures_business_id_businesses_id_fk" FOREIGN KEY ("business_id") REFERENCES "public"."businesses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_erasures_business_idx" ON "analytics_erasures" USING btree ("business_id","requested_at");--> statement-breakpoint
CREATE INDEX "analytics_erasures_pending_idx" ON "analytics_erasures" USING btree ("business_id") WHERE "analytics_erasures"."status" = 'pending';--> statement-breakpoint
ALTER TABLE "audit_entries" ADD CONSTRAINT "audit_entries_action_check" CHECK ("audit_entries"."action" in ('key.created', 'key.updated', 'key.revoked', 'key.rolled', 'member.created', 'member.removed', 'business.updated', 'analytics.erased'));