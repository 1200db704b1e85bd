CREATE TABLE "key_refused_others" (
	"key_id" uuid NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"kind" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "key_refused_others_key_id_hour_kind_pk" PRIMARY KEY("key_id","hour","kind"),
	CONSTRAINT "key_refused_others_kind_check" CHECK ("key_refused_others"."kind" in ('origin', 'ip'))
);
--> statement-breakpoint
ALTER TABLE "key_refused_others" ADD CONSTRAINT "key_refused_others_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "key_refused_others_hour_idx" ON "key_refused_others" USING btree ("hour");--> statement-breakpoint
CREATE INDEX "key_refused_ips_key_hour_idx" ON "key_refused_ips" USING btree ("key_id","hour");--> statement-breakpoint
CREATE INDEX "key_refused_origins_key_hour_idx" ON "key_refused_origins" USING btree ("key_id","hour");