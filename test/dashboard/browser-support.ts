import type { Page } from 'playwright-core'
import { KEYS, PASSWORD } from './support.ts'

/** Signs in through the sign-in page as a member would, and waits for the keys page it lands on. */
export async function signInAs(page: Page, dashboard: string, email: string): Promise<void> {
  await page.goto(`${dashboard}/dashboard/sign-in`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(`${dashboard}${KEYS}`)
}
