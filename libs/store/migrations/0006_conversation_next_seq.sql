ALTER TABLE "conversations" ADD COLUMN "next_seq" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Existing conversations continue after their last stored entry (appendHistory also takes the
-- greater of this and the stored max, so a row written by an older gateway during a rolling
-- upgrade is never overwritten).
UPDATE "conversations" SET "next_seq" = coalesce((SELECT max("history"."seq") + 1 FROM "history" WHERE "history"."tenant_id" = "conversations"."tenant_id" AND "history"."conversation_id" = "conversations"."conversation_id"), 0);
