import { newId } from '../../db/ids';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { emailWorkflowId, searchAttributes } from '../../../workflows/ids';
import type { EmailService } from './emails.service';
import type { Email, SendEmailBody } from './emails.schemas';

/** `POST /emails`: the message stored, rendered, then sent by its workflow. */
export function createEmailSendingService(deps: WorkflowServiceDeps & { emails: EmailService }) {
  const { emails, temporal } = deps;

  return {
    async send(organisationId: string, body: SendEmailBody, createdBy: string | null): Promise<Email> {
      const id = newId('eml');
      const email = await emails.create(await emails.prepare(organisationId, id, body, createdBy));
      try {
        await temporal.bounded(() =>
          temporal.workflows.start('emailDeliveryWorkflow', {
            workflowId: emailWorkflowId(id),
            args: [{ organisationId, emailId: id }],
            ...searchAttributes({ organisationId }),
          }),
        );
      } catch (error) {
        // No message without the workflow that sends it: the caller gets the error and nothing stays queued.
        await emails.discard(organisationId, id);
        throw error;
      }
      return email;
    },
  };
}

export type EmailSendingService = ReturnType<typeof createEmailSendingService>;
