CREATE TABLE "audit_entries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"business_id" uuid NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"key_id" uuid,
	"member_id" uuid,
	"request_id" text,
	"changes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	CONSTRAINT "audit_entries_action_check" CHECK ("audit_entries"."action" in ('key.created', 'key.updated', 'key.revoked', 'key.rolled', 'member.created', 'member.removed'))
);
--> statement-breakpoint
CREATE TABLE "key_refused_origins" (
	"key_id" uuid NOT NULL,
	"origin" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"reported" boolean NOT NULL,
	"count" bigint NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "key_refused_origins_key_id_origin_hour_reported_pk" PRIMARY KEY("key_id","origin","hour","reported")
);
--> statement-breakpoint
CREATE TABLE "key_scope_uses" (
	"key_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"last_used_at" timestamp with time zone NOT NULL,
	CONSTRAINT "key_scope_uses_key_id_scope_pk" PRIMARY KEY("key_id","scope")
);
--> statement-breakpoint
CREATE TABLE "key_usage_days" (
	"key_id" uuid NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"outcome" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "key_usage_days_key_id_at_outcome_pk" PRIMARY KEY("key_id","at","outcome")
);
--> statement-breakpoint
CREATE TABLE "key_usage_hours" (
	"key_id" uuid NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"outcome" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "key_usage_hours_key_id_at_outcome_pk" PRIMARY KEY("key_id","at","outcome")
);
--> statement-breakpoint
CREATE TABLE "key_usage_minutes" (
	"key_id" uuid NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"outcome" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "key_usage_minutes_key_id_at_outcome_pk" PRIMARY KEY("key_id","at","outcome")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "origin_policy" text DEFAULT 'enforce' NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "rolled_from" uuid;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "replaced_by" uuid;--> statement-breakpoint
ALTER TABLE "businesses" ADD COLUMN "identity_secret" text;--> statement-breakpoint
ALTER TABLE "audit_entries" ADD CONSTRAINT "audit_entries_business_id_businesses_id_fk" FOREIGN KEY ("business_id") REFERENCES "public"."businesses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_entries" ADD CONSTRAINT "audit_entries_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "key_refused_origins" ADD CONSTRAINT "key_refused_origins_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "key_scope_uses" ADD CONSTRAINT "key_scope_uses_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "key_usage_days" ADD CONSTRAINT "key_usage_days_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "key_usage_hours" ADD CONSTRAINT "key_usage_hours_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "key_usage_minutes" ADD CONSTRAINT "key_usage_minutes_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_entries_business_idx" ON "audit_entries" USING btree ("business_id","at","id");--> statement-breakpoint
CREATE INDEX "audit_entries_key_idx" ON "audit_entries" USING btree ("key_id","at","id");--> statement-breakpoint
CREATE INDEX "key_refused_origins_hour_idx" ON "key_refused_origins" USING btree ("hour");--> statement-breakpoint
CREATE INDEX "key_usage_days_at_idx" ON "key_usage_days" USING btree ("at");--> statement-breakpoint
CREATE INDEX "key_usage_hours_at_idx" ON "key_usage_hours" USING btree ("at");--> statement-breakpoint
CREATE INDEX "key_usage_minutes_at_idx" ON "key_usage_minutes" USING btree ("at");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_rolled_from_fk" FOREIGN KEY ("rolled_from") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_replaced_by_fk" FOREIGN KEY ("replaced_by") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_origin_policy_check" CHECK ("api_keys"."origin_policy" in ('enforce', 'report'));--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_report_public_only" CHECK ("api_keys"."origin_policy" = 'enforce' or "api_keys"."type" = 'public');--> statement-breakpoint
-- The audit trail is append-only whoever connects: no UPDATE, no DELETE (db/schema/audit.ts).
-- TRUNCATE, an operator's whole-table action, is not a row change.
CREATE FUNCTION "keygate_refuse_audit_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit entries are append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;--> statement-breakpoint
CREATE TRIGGER "audit_entries_append_only" BEFORE UPDATE OR DELETE ON "audit_entries"
  FOR EACH ROW EXECUTE FUNCTION "keygate_refuse_audit_change"();
