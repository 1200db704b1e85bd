/**
 * One logger for the service: JSON lines on stdout (`level`, `time`, `msg`, then fields
 * such as `requestId`), or `LOG_FORMAT=pretty` for people at a terminal.
 *
 * What goes in a line is chosen by the caller, field by field: never a key, a token, a
 * query string or a body. Errors go through `errorFields`, which
 * keeps their kind and place but not driver messages that may quote SQL parameters.
 */
export type LogLevel = 'info' | 'warn' | 'error'

export type LogFields = Record<string, string | number | boolean | null | undefined>

export interface Logger {
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
}

export type LogFormat = 'json' | 'pretty'

export interface LoggerOptions {
  format?: LogFormat
  /** Where finished lines go (newline included); stdout by default. Tests capture here. */
  write?: (line: string) => void
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const write = options.write ?? writeStdout
  const format = options.format === 'pretty' ? prettyLine : jsonLine
  function at(level: LogLevel) {
    return function log(msg: string, fields?: LogFields): void {
      write(format(level, msg, fields))
    }
  }
  return { info: at('info'), warn: at('warn'), error: at('error') }
}

/** A logger that drops everything (tests that do not read the log). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} }

/**
 * The `log(line)` style some modules take (the database-outage reporter, say): each line
 * becomes the `msg` of one entry at `level`. The line itself must hold no secret.
 */
export function lineLogger(logger: Logger, level: LogLevel = 'warn'): (line: string) => void {
  return function logLine(line: string): void {
    logger[level](line)
  }
}

function jsonLine(level: LogLevel, msg: string, fields: LogFields | undefined): string {
  // Callers never name a field level, time or msg; those three come first for people reading.
  return JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields }) + '\n'
}

function prettyLine(level: LogLevel, msg: string, fields: LogFields | undefined): string {
  let line = `${new Date().toISOString().slice(11, 23)} ${level.toUpperCase().padEnd(5)} ${msg}`
  if (fields) {
    for (const [name, value] of Object.entries(fields)) {
      if (value !== undefined) line += ` ${name}=${typeof value === 'string' ? JSON.stringify(value) : value}`
    }
  }
  return line + '\n'
}

// Bun's FileSink on stdout: lines are buffered and written together at most every 50 ms
// (or when 64 KiB wait), and before exiting: a write(2) per line would cost every logged
// request (bench/README.md, "Log lines written in batches").
const stdout = Bun.stdout.writer({ highWaterMark: 64 * 1024 })
const FLUSH_EVERY_MS = 50
let flushTimer: ReturnType<typeof setTimeout> | undefined

function writeStdout(line: string): void {
  stdout.write(line)
  if (flushTimer === undefined) {
    flushTimer = setTimeout(flushLog, FLUSH_EVERY_MS)
    // Pending log lines never keep the process alive on their own.
    flushTimer.unref()
  }
}

// A crash or a natural exit writes out what is buffered too.
process.on('exit', () => flushLog())

/** Writes out what is buffered; runs every 50 ms while lines arrive, and must run before exiting. */
export function flushLog(): void {
  clearTimeout(flushTimer)
  flushTimer = undefined
  void stdout.flush()
}

// Engine errors name code, not values ("undefined is not an object"); anything else, a
// driver error above all, may quote what was sent ("invalid input syntax: \"sk_...\"").
const ENGINE_ERRORS = new Set(['TypeError', 'ReferenceError', 'RangeError', 'SyntaxError'])

/**
 * What an unexpected error may put in a log line: its kind, the driver's SQLSTATE code and
 * the statement text (placeholders, never parameters), the first frames of its stack,
 * and its message only for engine errors. Drizzle's "Failed query" message carries the
 * parameters (a public key on insert, say), and PostgreSQL's messages quote values.
 */
export function errorFields(error: unknown): LogFields {
  let query: string | undefined
  let current = error
  // Drizzle wraps the driver's error: keep its statement, look at the cause.
  if (current instanceof Error && current.message.startsWith('Failed query') && current.cause instanceof Error) {
    query = /^Failed query: ([\s\S]*?)\nparams:/.exec(current.message)?.[1]
    current = current.cause
  }
  if (!(current instanceof Error)) return { error: typeof current, query }
  const code = (current as { code?: unknown }).code
  const syntaxFromJson = current.name === 'SyntaxError' && /JSON/i.test(current.message)
  return {
    error: current.name,
    code: typeof code === 'string' ? code : undefined,
    detail: ENGINE_ERRORS.has(current.name) && !syntaxFromJson ? current.message : undefined,
    query,
    at: stackFrames(current),
  }
}

function stackFrames(error: Error): string | undefined {
  const frames = (error.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line))
  return frames.length
    ? frames
        .slice(0, 3)
        .map((line) => line.trim())
        .join(' < ')
    : undefined
}
