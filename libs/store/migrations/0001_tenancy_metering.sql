CREATE TABLE "api_keys" (
	"tenant_id" text NOT NULL,
	"key_id" text NOT NULL,
	"user_id" text,
	"prefix" text NOT NULL,
	"hash" "bytea" NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	CONSTRAINT "api_keys_tenant_id_key_id_pk" PRIMARY KEY("tenant_id","key_id")
);
--> statement-breakpoint
CREATE TABLE "provider_credentials" (
	"tenant_id" text NOT NULL,
	"ref" text NOT NULL,
	"ciphertext" "bytea" NOT NULL,
	"iv" "bytea" NOT NULL,
	"tag" "bytea" NOT NULL,
	"key_version" integer NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "provider_credentials_tenant_id_ref_pk" PRIMARY KEY("tenant_id","ref")
);
--> statement-breakpoint
CREATE TABLE "tenant_routes" (
	"tenant_id" text NOT NULL,
	"model_id" text NOT NULL,
	"targets" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tenant_routes_tenant_id_model_id_pk" PRIMARY KEY("tenant_id","model_id")
);
--> statement-breakpoint
CREATE TABLE "tenants" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"retention" text DEFAULT 'full' NOT NULL,
	"limits" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tenants_retention_ck" CHECK ("tenants"."retention" in ('full', 'metadata', 'none'))
);
--> statement-breakpoint
CREATE TABLE "users" (
	"tenant_id" text NOT NULL,
	"user_id" text NOT NULL,
	"external_id" text,
	"email" text,
	"limits" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "users_tenant_id_user_id_pk" PRIMARY KEY("tenant_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target" text,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "prices" (
	"provider" text NOT NULL,
	"model" text NOT NULL,
	"version" integer NOT NULL,
	"input_per_mtok_micro_usd" bigint DEFAULT 0 NOT NULL,
	"output_per_mtok_micro_usd" bigint DEFAULT 0 NOT NULL,
	"cache_read_per_mtok_micro_usd" bigint DEFAULT 0 NOT NULL,
	"cache_write_per_mtok_micro_usd" bigint DEFAULT 0 NOT NULL,
	"effective_from" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "prices_provider_model_version_pk" PRIMARY KEY("provider","model","version")
);
--> statement-breakpoint
CREATE TABLE "usage_daily" (
	"tenant_id" text NOT NULL,
	"day" date NOT NULL,
	"user_id" text NOT NULL,
	"model" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"estimated_attempts" integer DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_read_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_write_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micro_usd" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_daily_tenant_id_day_user_id_model_pk" PRIMARY KEY("tenant_id","day","user_id","model")
);
--> statement-breakpoint
CREATE TABLE "usage_ledger" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"user_id" text,
	"key_id" text,
	"conversation_id" text NOT NULL,
	"request_id" text NOT NULL,
	"original_request_id" text,
	"generation" integer NOT NULL,
	"model_call_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"provider" text NOT NULL,
	"upstream_model" text NOT NULL,
	"route" text NOT NULL,
	"credentials_source" text NOT NULL,
	"raw_usage" jsonb,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_read_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_write_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"estimated" boolean NOT NULL,
	"price_version" integer,
	"cost_micro_usd" bigint DEFAULT 0 NOT NULL,
	"ttft_ms" integer,
	"duration_ms" integer NOT NULL,
	"outcome" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "usage_ledger_outcome_ck" CHECK ("usage_ledger"."outcome" in ('ok', 'cancelled', 'failed', 'retried', 'interrupted')),
	CONSTRAINT "usage_ledger_source_ck" CHECK ("usage_ledger"."credentials_source" in ('gateway', 'client'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_prefix_uq" ON "api_keys" USING btree ("prefix");--> statement-breakpoint
CREATE INDEX "provider_credentials_version_idx" ON "provider_credentials" USING btree ("key_version");--> statement-breakpoint
CREATE UNIQUE INDEX "users_external_uq" ON "users" USING btree ("tenant_id","external_id") WHERE "users"."external_id" is not null;--> statement-breakpoint
CREATE INDEX "audit_log_tenant_idx" ON "audit_log" USING btree ("tenant_id","id");--> statement-breakpoint
CREATE INDEX "prices_effective_idx" ON "prices" USING btree ("provider","model","effective_from" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "usage_ledger_attempt_uq" ON "usage_ledger" USING btree ("tenant_id","request_id","generation","model_call_id","attempt");--> statement-breakpoint
CREATE INDEX "usage_ledger_tenant_time_idx" ON "usage_ledger" USING btree ("tenant_id","created_at");