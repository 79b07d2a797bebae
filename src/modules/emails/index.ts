export { createEmailSendingService } from './email-sending.service';
export { createEmailService } from './emails.service';
