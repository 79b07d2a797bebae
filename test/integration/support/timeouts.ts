import { awayFromUtcMidnight } from '../../support/calendar';

// Integration tests wait on real servers, workflow bundling and worker restarts.
jest.setTimeout(180_000);

// Many files take their dates from today and compare them with the server's today minutes later: none
// starts in the last five minutes of a UTC day (the longest of them takes about two), so none spans a
// midnight. This runs before the file's module is loaded.
const waited = awayFromUtcMidnight(5 * 60_000);
if (waited > 0) process.stderr.write(`waited ${Math.round(waited / 1000)} s for the UTC day to turn before this file\n`);
