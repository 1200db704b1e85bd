-- Idempotency keys now belong to the API key that sent them (key_id) and remember the
-- body's digest. Stored claims last 24 h and cannot be attributed to a key: drop them.
DELETE FROM "flow_idempotency_keys";--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "rate_limit_limit" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "rate_limit_window_seconds" integer;--> statement-breakpoint
ALTER TABLE "flow_idempotency_keys" ADD COLUMN "key_id" uuid NOT NULL;--> statement-breakpoint
ALTER TABLE "flow_idempotency_keys" ADD COLUMN "body_digest" text NOT NULL;--> statement-breakpoint
ALTER TABLE "flow_idempotency_keys" ADD CONSTRAINT "flow_idempotency_keys_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flow_idempotency_keys" DROP CONSTRAINT "flow_idempotency_keys_pk";
--> statement-breakpoint
ALTER TABLE "flow_idempotency_keys" ADD CONSTRAINT "flow_idempotency_keys_pk" PRIMARY KEY("flow_id","key_id","idempotency_key");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_rate_limit_check" CHECK (("api_keys"."rate_limit_limit" is null and "api_keys"."rate_limit_window_seconds" is null) or ("api_keys"."rate_limit_limit" between 1 and 1000000 and "api_keys"."rate_limit_window_seconds" between 1 and 86400));--> statement-breakpoint
-- Every change to a key notifies its digest, whichever code path made it, so every
-- instance's key cache forgets the key at once (docs/api.md, "Revoking, expiring and rolling keys").
CREATE FUNCTION "keygate_notify_api_key_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('keygate_api_keys', OLD.key_hash);
  ELSE
    PERFORM pg_notify('keygate_api_keys', NEW.key_hash);
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "api_keys_notify_change" AFTER INSERT OR UPDATE OR DELETE ON "api_keys"
  FOR EACH ROW EXECUTE FUNCTION "keygate_notify_api_key_change"();
