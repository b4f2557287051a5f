import { COMMAND_OPTIONS, GLOBAL_OPTIONS, type CommandName, type OptionSpec } from './cli-options.js';
import { ExitCode } from './exit-codes.js';

const SUMMARY: Readonly<Record<CommandName, string>> = {
  hold: 'run a command while holding a lock (a distributed flock), or a semaphore\'s permits; exit with its status',
  elect: 'campaign for the leadership of an election and run a command while leading; exit with its status',
  inspect: 'show who holds a lock or a semaphore (owner, mode, fencing token, time left, metadata), or that it is free; or who leads an election',
};

const EXIT_STATUS = [
  `  ${ExitCode.OK}      the command succeeded (hold, elect), or the lock or leader was shown, or that there is none (inspect)`,
  '  1-255  hold, elect: the command\'s own exit status; 128+n when it was ended by signal n',
  `  ${ExitCode.USAGE}     bad usage (unknown flag, bad duration, empty key, no command, --permits on a backend without semaphores, elect or inspect --election on one without elections); nothing was contacted`,
  `  ${ExitCode.USAGE}     also: hold --permits n where the semaphore\'s holders use another n (LOCK_LIMIT_MISMATCH)`,
  `  ${ExitCode.KEY_CONFLICT}     a key the lock uses holds another kind of value, written by something else (LOCK_KEY_CONFLICT)`,
  `  ${ExitCode.BACKEND_UNAVAILABLE}     the backend could not be reached (or no Redlock majority)`,
  `  ${ExitCode.INTERNAL}     an unexpected error`,
  `  ${ExitCode.NOT_ACQUIRED}     hold: the lock was not acquired (held, with --no-wait; or --wait ran out); elect: not elected within --wait; see --conflict-exit-code`,
  `  ${ExitCode.LOCK_LOST}     hold, elect: the lock (the leadership) was lost while the command ran; the command was stopped`,
  `  ${ExitCode.CANNOT_EXECUTE}    hold, elect: the command could not be run; ${ExitCode.COMMAND_NOT_FOUND}: the command was not found`,
  '  130    hold, elect: interrupted (SIGINT) while waiting for the lock (143: SIGTERM, 129: SIGHUP)',
];

const HOLD_EXAMPLES = [
  '  # Run the nightly report on one machine at a time; others wait up to 30 s, then give up (75).',
  '  fencelock hold reports:nightly -- ./nightly-report.sh',
  '',
  '  # Cron: skip this run if another one is still going.',
  '  fencelock hold --no-wait backup -- pg_dump -f /backups/db.sql mydb',
  '',
  '  # etcd, waiting as long as it takes, with the fencing token passed on to the job.',
  '  fencelock hold -b etcd --etcd-endpoints http://10.0.0.5:2379 --wait forever deploy \\',
  '    -- sh -c \'./deploy.sh --fence "$FENCELOCK_TOKEN"\'',
  '',
  '  # The lock `etcdctl lock deploy` takes: etcd\'s own lock names (no prefix, the key as it is).',
  "  fencelock hold -b etcd --etcd-key-prefix '' --etcd-key-encoding as-is deploy -- ./deploy.sh",
  '',
  '  # PostgreSQL: a session advisory lock, excluded by pg_advisory_lock(<id>) of other programs.',
  '  fencelock hold -b postgres --postgres-url postgres://app@db:5432/app migrate -- ./migrate.sh',
  '',
  '  # A counting semaphore: at most 3 exports run at once across machines; a 4th waits for a permit.',
  '  fencelock hold --permits 3 --wait 10m exports -- ./export.sh',
];

const ELECT_EXAMPLES = [
  '  # One scheduler leads; standbys on other machines wait (with no time limit) to take over.',
  '  fencelock elect -b etcd scheduler -- ./run-scheduler.sh',
  '',
  '  # Stand with an address, and pass the term on so that a deposed leader\'s writes are refused.',
  '  fencelock elect -b zookeeper --value 10.0.0.7:8080 scheduler \\',
  '    -- sh -c \'./run-scheduler.sh --fence "$FENCELOCK_TERM"\'',
  '',
  '  # Who leads now?',
  '  fencelock inspect --election scheduler',
];

const ELECT_DETAILS = [
  'fencelock campaigns for the leadership of the election <name> with --value (default:',
  '<hostname>:<pid>) and waits until elected: with no time limit unless --wait bounds it (then 75 if',
  'not elected in time; --no-wait tries once). Once elected it runs the command as hold does: in its',
  'own process group, signals passed on, and if leadership is lost (the session expired, the',
  'candidacy deleted) the command gets SIGTERM, then SIGKILL after --kill-grace (exit 76). When the',
  'command exits fencelock resigns, so the next campaigner is elected, and exits with its status.',
  'Elections are apart from locks and semaphores of the same name. The backend must have elections',
  '(every backend here has them; redlock without terms, so FENCELOCK_TERM is unset there); one that',
  'declares none is refused with 64 before fencelock connects.',
  '',
  'The command\'s environment has hold\'s variables (FENCELOCK_KEY is the election\'s name;',
  'FENCELOCK_TOKEN the term), and:',
  '  FENCELOCK_TERM          the term (decimal): greater than every earlier leader\'s; pass it with',
  '                          every write so the resource can refuse a deposed leader',
  '  FENCELOCK_LEADER_VALUE  the value this leader stands with (--value)',
];

const INSPECT_EXAMPLES = [
  '  fencelock inspect reports:nightly',
  '  FENCELOCK_BACKEND=zookeeper FENCELOCK_ZK_HOSTS=zk1:2181,zk2:2181 fencelock inspect deploy --json',
  '',
  '  # Who holds the lock that kazoo services take on /services/locks/deploy?',
  '  fencelock inspect -b zookeeper --zk-root /services/locks --zk-naming kazoo deploy',
  '',
  '  # The holders of the semaphore that `fencelock hold --permits 3 exports` takes, and its limit.',
  '  fencelock inspect --semaphore exports',
  '',
  '  # The leader of the election that `fencelock elect scheduler` campaigns in: its value and term.',
  '  fencelock inspect --election scheduler --json',
];

const INSPECT_DETAILS = [
  'inspect exits 0 whether the lock is held or free. With --election it prints the leader\'s value',
  'and term, or that the election has no leader (--json: {"name","backend","state":"led"|"none",',
  '"value","term"}, the term a decimal string or null), and exits 0 either way.',
];

const HOLD_DETAILS = [
  'The command runs directly (no shell: write `sh -c \'…\'` for one), with stdin, stdout and stderr',
  'inherited, in its own process group. While it runs, the lock is extended every third of its TTL',
  '(on etcd, zookeeper and postgres: kept by the session and re-confirmed as often), SIGINT, SIGTERM and SIGHUP',
  'sent to fencelock are passed on to it, and if the lock is lost the command gets SIGTERM, then',
  'SIGKILL after --kill-grace (exit 76). The lock is released when the command exits.',
  '',
  'The command\'s environment has:',
  '  FENCELOCK_KEY       the lock key',
  '  FENCELOCK_TOKEN     the fencing token (decimal; unset on redlock, which has none): pass it with',
  '                      every write so the resource can refuse a writer that lost the lock',
  '  FENCELOCK_OWNER_ID  this acquisition\'s owner id, as inspect shows it',
  '  FENCELOCK_FENCING   how strong the token is: global (etcd, zookeeper), per-key (redis, postgres), none',
  '  FENCELOCK_SEMAPHORE_LIMIT, FENCELOCK_SEMAPHORE_PERMITS',
  '                      with --permits: the semaphore\'s limit and the permits this hold has',
  '',
  'With --permits n, fencelock holds a permit of the counting semaphore <key> of n permits instead',
  'of the lock (semaphores are apart from locks: a lock and a semaphore of one key do not meet): up',
  'to n holds of it run at once, the next waits per --wait for a permit, and all the above holds for',
  'it (loss, --max-hold, signals, exit statuses). Every holder must give the same n, or it fails with',
  'LOCK_LIMIT_MISMATCH (64). --take k takes k permits at once, all or none. The backend must have',
  'semaphores (and multi-permit ones for k above 1): one that declares none is refused with 64',
  'before fencelock connects. Each permit has its own fencing token, greater than every earlier one.',
  '',
  'A waiting status line is drawn on stderr when it is a terminal; otherwise fencelock is quiet',
  'unless --verbose.',
];

/** The text of `fencelock --help`, or of `fencelock <command> --help`. */
export function helpText(command: CommandName | undefined): string {
  return `${(command === undefined ? globalHelp() : commandHelp(command)).join('\n')}\n`;
}

function globalHelp(): string[] {
  return [
    'fencelock — distributed locks from the shell: run a command while holding a lock on Redis,',
    'Redlock, etcd, ZooKeeper or PostgreSQL (a distributed flock), and see who holds one.',
    '',
    'Usage:',
    '  fencelock hold <key> [options] -- <command> [args…]',
    '  fencelock elect <name> [options] -- <command> [args…]',
    '  fencelock inspect <key> [options]',
    '  fencelock help [hold|elect|inspect]',
    '',
    'Commands:',
    ...Object.entries(SUMMARY).map(([name, summary]) => `  ${name.padEnd(9)}${summary}`),
    '',
    'Options for every command (a flag wins over its environment variable):',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Exit status:',
    ...EXIT_STATUS,
    '',
    'Examples:',
    ...HOLD_EXAMPLES,
    '',
    ...ELECT_EXAMPLES,
    '',
    ...INSPECT_EXAMPLES,
    '',
    'More: fencelock hold --help, fencelock elect --help, fencelock inspect --help.',
  ];
}

function commandHelp(command: CommandName): string[] {
  const usage = command === 'inspect' ? 'fencelock inspect <key> [options]' : `fencelock ${command} ${command === 'elect' ? '<name>' : '<key>'} [options] -- <command> [args…]`;
  return [
    `fencelock ${command} — ${SUMMARY[command]}.`,
    '',
    'Usage:',
    `  ${usage}`,
    '',
    ...[...DETAILS[command], ''],
    `Options of ${command}:`,
    ...optionLines(COMMAND_OPTIONS[command]),
    '',
    'Options for every command (a flag wins over its environment variable):',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Exit status:',
    // Each command's own lines: those of hold are hold's and, where they name it, elect's.
    ...EXIT_STATUS.filter((line) => command === 'hold' || !/ hold(, elect)?: /.test(line) || (command === 'elect' && / elect/.test(line))),
    '',
    'Examples:',
    ...EXAMPLES[command],
  ];
}

const DETAILS: Readonly<Record<CommandName, readonly string[]>> = { hold: HOLD_DETAILS, elect: ELECT_DETAILS, inspect: INSPECT_DETAILS };
const EXAMPLES: Readonly<Record<CommandName, readonly string[]>> = { hold: HOLD_EXAMPLES, elect: ELECT_EXAMPLES, inspect: INSPECT_EXAMPLES };

function optionLines(options: readonly OptionSpec[]): string[] {
  const heads = options.map((option) => {
    const short = option.short === undefined ? '    ' : `-${option.short}, `;
    return `  ${short}--${option.name}${option.valueName === undefined ? '' : ` ${option.valueName}`}`;
  });
  const width = Math.max(...heads.map((head) => head.length)) + 2;
  return options.map((option, index) => {
    const env = option.env === undefined ? '' : ` [${option.env}]`;
    return `${(heads[index] as string).padEnd(width)}${option.description}${env}`;
  });
}
