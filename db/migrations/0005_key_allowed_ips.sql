CREATE TABLE "key_refused_ips" (
	"key_id" uuid NOT NULL,
	"ip" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"reported" boolean NOT NULL,
	"count" bigint NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "key_refused_ips_key_id_ip_hour_reported_pk" PRIMARY KEY("key_id","ip","hour","reported")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "allowed_ips" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "ip_policy" text DEFAULT 'enforce' NOT NULL;--> statement-breakpoint
ALTER TABLE "key_refused_ips" ADD CONSTRAINT "key_refused_ips_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "key_refused_ips_hour_idx" ON "key_refused_ips" USING btree ("hour");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_ip_policy_check" CHECK ("api_keys"."ip_policy" in ('enforce', 'report'));--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_ips_private_only" CHECK (cardinality("api_keys"."allowed_ips") = 0 or "api_keys"."type" = 'private');