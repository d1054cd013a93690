// Placeholder: the machine-identity capability registers `svc client ...` and `svc idp ...` here.
import type { Command } from 'commander';

export function registerMachineCommands(_program: Command): void {}
