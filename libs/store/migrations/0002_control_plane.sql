ALTER TABLE "tenant_routes" ADD COLUMN "catalogue" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "policy" jsonb DEFAULT '{}'::jsonb NOT NULL;