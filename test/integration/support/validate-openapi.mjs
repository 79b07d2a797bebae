// Validates an OpenAPI document (JSON on stdin) against the official schemas; prints the result as JSON.
import process from 'node:process';
import { Validator } from '@seriousme/openapi-schema-validator';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const validator = new Validator();
const result = await validator.validate(JSON.parse(input));
process.stdout.write(JSON.stringify({ valid: result.valid, version: validator.version, errors: result.errors ?? null }));
