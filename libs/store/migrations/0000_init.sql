CREATE TABLE "blobs" (
	"tenant_id" text NOT NULL,
	"blob_id" "bytea" NOT NULL,
	"data" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "blobs_tenant_id_blob_id_pk" PRIMARY KEY("tenant_id","blob_id"),
	CONSTRAINT "blobs_blob_id_len" CHECK (octet_length("blobs"."blob_id") = 32)
);
--> statement-breakpoint
CREATE TABLE "checkpoints" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"conversation_id" text NOT NULL,
	"request_id" text NOT NULL,
	"generation" integer NOT NULL,
	"state" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"tenant_id" text NOT NULL,
	"conversation_id" text NOT NULL,
	"meta" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "conversations_tenant_id_conversation_id_pk" PRIMARY KEY("tenant_id","conversation_id")
);
--> statement-breakpoint
CREATE TABLE "history" (
	"tenant_id" text NOT NULL,
	"conversation_id" text NOT NULL,
	"seq" integer NOT NULL,
	"request_id" text NOT NULL,
	"generation" integer NOT NULL,
	"turn" integer NOT NULL,
	"kind" text NOT NULL,
	"body" jsonb NOT NULL,
	"dedupe_key" text,
	"interrupted" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "history_tenant_id_conversation_id_seq_pk" PRIMARY KEY("tenant_id","conversation_id","seq")
);
--> statement-breakpoint
CREATE INDEX "checkpoints_latest_idx" ON "checkpoints" USING btree ("tenant_id","conversation_id","id" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "history_dedupe_uq" ON "history" USING btree ("tenant_id","conversation_id","request_id","generation","dedupe_key") WHERE "history"."dedupe_key" is not null;