-- An account is its person's alone (docs/dashboard.md, "Members and sign-in links"). Links
-- made before this migration are taken as a member's: they set a password only for an
-- account without one, else they ask for it. A membership is accepted when its account's
-- person joined it; for the memberships made before, only the first of an account with a
-- password is known to be its person's (it is the one its password was set for), so the
-- others wait, pending, for a link of their business's owner and the account's password.
ALTER TABLE "member_sign_in_links" ADD COLUMN "issued_by" text DEFAULT 'member' NOT NULL;--> statement-breakpoint
ALTER TABLE "member_sign_in_links" ALTER COLUMN "issued_by" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "members" ADD COLUMN "accepted_at" timestamp with time zone;--> statement-breakpoint
UPDATE "members" SET "accepted_at" = "members"."created_at"
	FROM "accounts"
	WHERE "accounts"."id" = "members"."account_id" AND "accounts"."password_hash" IS NOT NULL
	AND "members"."id" = (
		SELECT "first"."id" FROM "members" AS "first" WHERE "first"."account_id" = "members"."account_id"
		ORDER BY "first"."created_at", "first"."id" LIMIT 1
	);--> statement-breakpoint
ALTER TABLE "member_sign_in_links" ADD CONSTRAINT "member_sign_in_links_issued_by_check" CHECK ("member_sign_in_links"."issued_by" in ('member', 'operator'));
