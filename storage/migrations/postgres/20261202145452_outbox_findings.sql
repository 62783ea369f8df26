-- Modify "outbox_messages" table
ALTER TABLE "outbox_messages" ALTER COLUMN "proposal_id" DROP NOT NULL, ADD COLUMN "finding_id" uuid NULL;
-- Create index "outboxmessage_finding_id" to table: "outbox_messages"
CREATE INDEX "outboxmessage_finding_id" ON "outbox_messages" ("finding_id");
