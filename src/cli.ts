/**
 * The bundle's entry: oclif's "explicit" command strategy reads COMMANDS from here, so start-up loads one
 * file instead of resolving a command tree. Commands import their heavy layers (apply, Docker, ssh) lazily.
 */
import Build from './commands/build.js'
import Calibrate from './commands/calibrate.js'
import Doctor from './commands/doctor.js'
import Down from './commands/down.js'
import Exec from './commands/exec.js'
import Extend from './commands/extend.js'
import Help from './commands/help.js'
import Info from './commands/info.js'
import LeaseHold from './commands/lease/hold.js'
import LeaseRelease from './commands/lease/release.js'
import Ls from './commands/ls.js'
import Metrics from './commands/metrics.js'
import Plan from './commands/plan.js'
import Ps from './commands/ps.js'
import Recover from './commands/recover.js'
import Remote from './commands/remote.js'
import Report from './commands/report.js'
import Reset from './commands/reset.js'
import Ssh from './commands/ssh.js'
import SshConfig from './commands/ssh-config.js'
import Status from './commands/status.js'
import SystemInstall from './commands/system/install.js'
import SystemReap from './commands/system/reap.js'
import SystemStatus from './commands/system/status.js'
import SystemUninstall from './commands/system/uninstall.js'
import Up from './commands/up.js'
import Verify from './commands/verify.js'
import Version from './commands/version.js'

export const COMMANDS = {
  build: Build,
  calibrate: Calibrate,
  doctor: Doctor,
  down: Down,
  exec: Exec,
  extend: Extend,
  help: Help,
  info: Info,
  'lease:hold': LeaseHold,
  'lease:release': LeaseRelease,
  ls: Ls,
  metrics: Metrics,
  plan: Plan,
  ps: Ps,
  recover: Recover,
  remote: Remote,
  report: Report,
  reset: Reset,
  ssh: Ssh,
  'ssh-config': SshConfig,
  status: Status,
  'system:install': SystemInstall,
  'system:reap': SystemReap,
  'system:status': SystemStatus,
  'system:uninstall': SystemUninstall,
  up: Up,
  verify: Verify,
  version: Version,
}

export {execute} from '@oclif/core'
