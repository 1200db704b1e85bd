-- The event store keeps what a sharded PostgreSQL (distributed by business_id) needs (docs/scaling.md): the erasure requests' primary key holds business_id, and no foreign key leaves the store.
ALTER TABLE "analytics_erasures" DROP CONSTRAINT "analytics_erasures_business_id_businesses_id_fk";--> statement-breakpoint
ALTER TABLE "analytics_erasures" DROP CONSTRAINT "analytics_erasures_pkey";--> statement-breakpoint
ALTER TABLE "analytics_erasures" ADD CONSTRAINT "analytics_erasures_pkey" PRIMARY KEY("business_id","id");
