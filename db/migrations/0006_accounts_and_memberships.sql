-- One person, several businesses (docs/dashboard.md, "One person, several businesses"): the email and password move from
-- `members` to `accounts`, and a member becomes a membership (account, business, role).
-- Every existing member gets an account of the same id, so their sessions, sign-in links
-- and audit entries, which name the member, keep working unchanged.
CREATE TABLE "accounts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"email" text NOT NULL,
	"password_hash" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "accounts_email_unique" UNIQUE("email")
);
--> statement-breakpoint
INSERT INTO "accounts" ("id", "email", "password_hash", "created_at")
	SELECT "id", "email", "password_hash", "created_at" FROM "members";--> statement-breakpoint
ALTER TABLE "members" ADD COLUMN "account_id" uuid;--> statement-breakpoint
UPDATE "members" SET "account_id" = "id";--> statement-breakpoint
ALTER TABLE "members" ALTER COLUMN "account_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "members" ADD CONSTRAINT "members_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "members_account_business_idx" ON "members" USING btree ("account_id","business_id");--> statement-breakpoint
ALTER TABLE "members" DROP CONSTRAINT "members_email_unique";--> statement-breakpoint
ALTER TABLE "members" DROP COLUMN "email";--> statement-breakpoint
ALTER TABLE "members" DROP COLUMN "password_hash";
