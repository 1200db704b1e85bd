-- Leaked keys (docs/api.md, "When a key leaks"): the key's first report, the banner's dismissal, their audit actions; and the outbox of events for webhooks (db/schema/webhooks.ts).
CREATE TABLE "webhook_events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"business_id" uuid NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_events_type_check" CHECK (type in ('key.created', 'key.revoked', 'key.rolled', 'key.expiring', 'key.leaked', 'erasure.completed', 'webhook.test'))
);
--> statement-breakpoint
ALTER TABLE "audit_entries" DROP CONSTRAINT "audit_entries_action_check";--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "leak" jsonb;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "leak_dismissed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_business_id_businesses_id_fk" FOREIGN KEY ("business_id") REFERENCES "public"."businesses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_events_business_idx" ON "webhook_events" USING btree ("business_id","created_at");--> statement-breakpoint
ALTER TABLE "audit_entries" ADD CONSTRAINT "audit_entries_action_check" CHECK ("audit_entries"."action" in ('key.created', 'key.updated', 'key.revoked', 'key.rolled', 'key.leaked', 'key.browser_use', 'member.created', 'member.removed', 'member.joined', 'business.updated', 'analytics.erased'));