CREATE TABLE "refusals" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"user_id" text,
	"key_id" text,
	"request_id" text NOT NULL,
	"route" text,
	"reason" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "refusals_reason_ck" CHECK ("refusals"."reason" in ('rate_limited', 'budget_exhausted', 'unknown_model'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "refusals_request_uq" ON "refusals" USING btree ("tenant_id","request_id","reason");--> statement-breakpoint
CREATE INDEX "refusals_tenant_time_idx" ON "refusals" USING btree ("tenant_id","created_at");