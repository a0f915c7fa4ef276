from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from accounts.models import Invitation, Membership, Team, User


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    fieldsets = (*DjangoUserAdmin.fieldsets, ("Profile", {"fields": ("display_name",)}))


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = (
        "team",
        "role",
        "created_by",
        "created_at",
        "expires_at",
        "accepted_by",
        "revoked_at",
    )
    list_filter = ("role",)
    # Tokens are created in the app, where the link is shown once; here they are only audited.
    readonly_fields = ("token_hash", "accepted_by", "accepted_at", "created_by", "created_at")

    def has_add_permission(self, request, obj=None) -> bool:
        return False
