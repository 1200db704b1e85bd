import { parseArgs } from 'node:util'
import { AdminApiError, ConnectionError, createAdminClient } from './cli/admin-client.ts'
import { UsageError, type Command, type OptionSpec } from './cli/command.ts'
import { commandHelp, commands, globalOptions, helpText } from './cli/commands.ts'
import { CLI } from './cli/output.ts'

export interface CliIo {
  out: (line: string) => void
  err: (line: string) => void
  readStdin: () => Promise<string>
}

/**
 * `npm run cli -- <command>`: the operators' CLI over `/admin/v0`.
 * Exit status 0 done, 1 refused by the server or unreachable, 2 usage error.
 */
export async function runCli(
  argv: string[],
  env: Record<string, string | undefined>,
  io: CliIo = {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
    readStdin: () => Bun.stdin.text(),
  },
): Promise<number> {
  let command: Command | undefined
  try {
    const words = commandWords(argv)
    if (words.help || words.positionals[0] === 'help') {
      io.out(helpText())
      return 0
    }
    if (words.positionals.length === 0) throw new UsageError('No command given.')
    command = commands.find((c) => c.name === words.positionals.slice(0, 2).join(' '))
    if (!command) throw new UsageError(`Unknown command "${words.positionals.slice(0, 2).join(' ')}".`)

    const options: Record<string, OptionSpec> = { ...globalOptions, ...command.options }
    const { values, positionals } = parseArgs({
      args: argv,
      options,
      allowPositionals: true,
      strict: true,
    })
    const rest = positionals.slice(2)
    const expected = command.target ? 1 : 0
    if (rest.length !== expected) {
      throw new UsageError(
        command.target
          ? `${command.name} takes one ${command.target}.`
          : `${command.name} takes no argument "${rest[0]}": did you forget an option name?`,
      )
    }
    const missing = command.required.filter((name) => typeof values[name] !== 'string' || values[name] === '')
    if (missing.length > 0) {
      throw new UsageError(`${command.name} needs ${missing.map((name) => `--${name}`).join(', ')}.`)
    }
    const url = stringOption(values.url) ?? env.KEYGATE_URL ?? 'http://localhost:3000'
    const token = stringOption(values.token) ?? env.ADMIN_TOKEN
    if (!token) {
      throw new UsageError('No admin token: set ADMIN_TOKEN (or pass --token) to the token the service runs with.')
    }

    const result = await command.run({ options: values, target: rest[0], api: createAdminClient(url, token), readStdin: io.readStdin })
    io.out(values.json === true ? JSON.stringify(result.json, null, 2) : result.text)
    return 0
  } catch (error) {
    if (error instanceof UsageError || isParseArgsError(error)) {
      // The help first, the mistake last, where a terminal leaves it in view.
      io.err(command ? `${commandHelp(command)}\n\nEverything: ${CLI} help\n` : `${helpText()}\n`)
      // parseArgs adds advice about "--" that does not fit these commands.
      io.err(`error: ${error.message.replace(/\. To specify a positional argument.*$/s, '.')}`)
      return 2
    }
    if (error instanceof AdminApiError) {
      const request = error.requestId ? ` (request ${error.requestId})` : ''
      io.err(`error: ${error.code}: ${error.message}${request}`)
      return 1
    }
    if (error instanceof ConnectionError) {
      io.err(`error: ${error.message}`)
      return 1
    }
    throw error
  }
}

/**
 * A first, lenient pass that only finds the command words. It knows every option's type
 * so that an option's value (`--name keys`) is never taken for a command word.
 */
function commandWords(argv: string[]): { positionals: string[]; help: boolean } {
  const allOptions: Record<string, OptionSpec> = { ...globalOptions }
  for (const command of commands) Object.assign(allOptions, command.options)
  const { values, positionals } = parseArgs({ args: argv, options: allOptions, allowPositionals: true, strict: false })
  return { positionals, help: values.help === true }
}

function stringOption(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

function isParseArgsError(error: unknown): error is Error {
  return error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')
}

if (import.meta.main) {
  process.exitCode = await runCli(process.argv.slice(2), process.env)
}
