CREATE TABLE "run_fences" (
	"tenant_id" text NOT NULL,
	"request_id" text NOT NULL,
	"generation" integer NOT NULL,
	"epoch" integer NOT NULL,
	"claimed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_fences_tenant_id_request_id_generation_pk" PRIMARY KEY("tenant_id","request_id","generation")
);
--> statement-breakpoint
CREATE INDEX "run_fences_claimed_idx" ON "run_fences" USING btree ("tenant_id","claimed_at");