ALTER TABLE "api_keys" ADD COLUMN "scope" text DEFAULT 'gateway' NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_ledger" ADD COLUMN "ttft_overhead_us" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_scope_ck" CHECK ("api_keys"."scope" in ('gateway', 'usage_read'));